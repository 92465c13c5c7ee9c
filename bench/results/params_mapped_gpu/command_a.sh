#!/usr/bin/env bash
# call A: lockstep rounds (bench/lockstep_ab.py, 24 steps a run) of the 24-layer GPT-2 and BERT-Large
# (bf16, fused AdamW, half their footprints): this tree's defaults against host mapping of every block
# the last iteration used in at most two launches, wherever they lie in it (map2.json).
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
D=bench/results/params_mapped_gpu
python3 bench/lockstep_ab.py --out $R/gpt2 --models gpt2 --steps 24 --rounds 5 --stop-after 330 \
  --tree map2=$D/map2.json 2>&1 | tee $R/ab_gpt2.log
python3 bench/lockstep_ab.py --out $R/bert --models bert-large --steps 24 --rounds 4 --stop-after $(( 530 - ($(date +%s) - T0) )) \
  --tree map2=$D/map2.json 2>&1 | tee $R/ab_bert.log
cd $OUT && tar -czf records.tgz records && rm -rf records
