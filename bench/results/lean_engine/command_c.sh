#!/usr/bin/env bash
# call C: lockstep pairs of BERT-Large (bf16, fused AdamW, half its footprint) on the committed engine,
# 24 steps a run, for the time left (bench/lockstep_ab.py).
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
python3 bench/lockstep_ab.py --out $R --models bert-large --steps 24 --rounds 5 --stop-after 150 2>&1 | tee $R/ab.log
cd $OUT && tar -czf records.tgz records && rm -rf records
