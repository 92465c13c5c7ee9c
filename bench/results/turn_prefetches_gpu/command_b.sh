#!/usr/bin/env bash
# call B: lockstep rounds of BERT-Large (bf16, fused AdamW, half its footprint) with the defaults,
# recall_iterations 6 and prefetch_batch 8 (r6b8) and the same with repeat_plans_percent 95 (r6b8r95).
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
D=bench/results/turn_prefetches_gpu
python3 bench/lockstep_ab.py --out $R --models bert-large --steps 24 --rounds 5 --stop-after 380 \
  --tree r6b8=$D/r6b8.json --tree r6b8r95=$D/r6b8r95.json 2>&1 | tee $R/ab.log
cd $OUT && tar -czf records.tgz records && rm -rf records
