#!/usr/bin/env bash
# call A: lockstep pairs of GPT-2 (bf16, fused AdamW, half its footprint) on the committed engine, its
# defaults against the predictor's window reaching further (recall of two iterations with lookahead 96
# and 256), 24 steps a run, the settings taking turns (bench/lockstep_ab.py).
source bench/device_setup.sh
D=bench/results/window_reach
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
python3 bench/lockstep_ab.py --out $R --models gpt2 --steps 24 --rounds 3 --stop-after 400 \
  --tree recall2_lookahead96=$D/recall2_lookahead96.json --tree recall2_lookahead256=$D/recall2_lookahead256.json \
  2>&1 | tee $R/ab.log
cd $OUT && tar -czf records.tgz records && rm -rf records
