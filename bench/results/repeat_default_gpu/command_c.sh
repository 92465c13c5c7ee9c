#!/usr/bin/env bash
# call C (on call B's machine): lockstep rounds of BERT-Large (bf16, fused AdamW, half its footprint)
# and then more of the 24-layer GPT-2, this tree's defaults against repeat_plans_percent 0.
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
D=bench/results/repeat_default_gpu
python3 bench/lockstep_ab.py --out $R/bert --models bert-large --steps 24 --rounds 4 --stop-after 250 \
  --tree repeat0=$D/repeat0.json 2>&1 | tee $R/ab_bert.log
python3 bench/lockstep_ab.py --out $R/gpt2 --models gpt2 --steps 24 --rounds 6 --stop-after $(( 540 - ($(date +%s) - T0) )) \
  --tree repeat0=$D/repeat0.json 2>&1 | tee $R/ab_gpt2.log
cd $OUT && tar -czf records.tgz records && rm -rf records
