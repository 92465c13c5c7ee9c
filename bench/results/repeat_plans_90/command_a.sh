#!/usr/bin/env bash
# call A (for the GPU): lockstep rounds of the 24-layer BERT-Large in fp32 (foreach Adam) and in bf16
# (fused AdamW) at half their footprints (bench/lockstep_ab.py, 24 steps a run): this tree's defaults
# (repeat_plans_percent 95) against repeat_plans_percent 90.
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
python3 bench/lockstep_ab.py --out $R/bert --models bert-large-fp32,bert-large --steps 24 --rounds 5 \
  --stop-after $(( 500 - ($(date +%s) - T0) )) --tree percent90=bench/results/repeat_plans_90/percent90.json 2>&1 | tee $R/ab_bert.log
cd $OUT && tar -czf records.tgz records && rm -rf records
