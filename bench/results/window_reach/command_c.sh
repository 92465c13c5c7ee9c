#!/usr/bin/env bash
# call C: lockstep pairs of GPT-2 (bf16, fused AdamW, half its footprint): the defaults against the
# window's prefetches a batch at a time (prefetch_batch 8), and against recall 2 with lookahead 256
# and batches of 32, 24 steps a run, the settings taking turns (bench/lockstep_ab.py).
source bench/device_setup.sh
D=bench/results/window_reach
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
python3 bench/lockstep_ab.py --out $R --models gpt2 --steps 24 --rounds 3 --stop-after 400 \
  --tree batch8=$D/batch8.json --tree recall2_lookahead256_batch32=$D/recall2_lookahead256_batch32.json \
  2>&1 | tee $R/ab.log
cd $OUT && tar -czf records.tgz records && rm -rf records
