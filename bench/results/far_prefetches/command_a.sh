#!/usr/bin/env bash
# call A (for the GPU): lockstep rounds of the 24-layer GPT-2 (bf16, fused AdamW, half its footprint;
# bench/lockstep_ab.py, 24 steps a run): this tree's defaults (far_prefetches "evict") against
# far_prefetches "dead_only" and "skip".
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
python3 bench/lockstep_ab.py --out $R/gpt2 --models gpt2 --steps 24 --rounds 5 --stop-after $(( 480 - ($(date +%s) - T0) )) \
  --tree dead_only=bench/results/far_prefetches/dead_only.json \
  --tree skip=bench/results/far_prefetches/skip.json 2>&1 | tee $R/ab_gpt2.log
cd $OUT && tar -czf records.tgz records && rm -rf records
