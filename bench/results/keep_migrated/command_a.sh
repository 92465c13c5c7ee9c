#!/usr/bin/env bash
# call A: lockstep rounds of the 24-layer GPT-2 in fp32 with foreach Adam at half its footprint
# (bench/lockstep_ab.py --models gpt2-fp32, 24 steps a run): host_map_keep_uses 0 (keep0.json, every
# block host mapping chooses is mapped; the tree "this_tree") against 3 (keep3.json, the tree "keep3").
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
python3 bench/lockstep_ab.py --out $R/gpt2 --models gpt2-fp32 --steps 24 --rounds 8 \
  --stop-after $(( 300 - ($(date +%s) - T0) )) --deepum-config bench/results/keep_migrated/keep0.json \
  --tree keep3=bench/results/keep_migrated/keep3.json 2>&1 | tee $R/ab_gpt2.log
cd $OUT && tar -czf records.tgz records && rm -rf records
