#!/usr/bin/env bash
# call D: more lockstep pairs of the defaults on this tree (bench/lockstep_ab.py, 24 steps a run),
# GPT-2 and BERT-Large (bf16, fused AdamW, half their footprints), while device time lasts.
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
python3 bench/lockstep_ab.py --out $R --models gpt2,bert-large --steps 24 --rounds 3 --stop-after 120 2>&1 | tee $R/ab.log
cd $OUT && tar -czf records.tgz records && rm -rf records
