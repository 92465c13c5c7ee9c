#!/usr/bin/env bash
# call B: lockstep rounds of the 24-layer GPT-2 and BERT-Large in bf16 with fused AdamW at half their
# footprints (bench/lockstep_ab.py --models gpt2,bert-large, 24 steps a run): host_map_keep_uses 3
# (keep3.json, the default; the tree "this_tree") against 0 (keep0.json, the tree "keep0").
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
python3 bench/lockstep_ab.py --out $R/bf16 --models gpt2,bert-large --steps 24 --rounds 5 \
  --stop-after $(( 500 - ($(date +%s) - T0) )) --deepum-config bench/results/keep_migrated/keep3.json \
  --tree keep0=bench/results/keep_migrated/keep0.json 2>&1 | tee $R/ab_bf16.log
cd $OUT && tar -czf records.tgz records && rm -rf records
