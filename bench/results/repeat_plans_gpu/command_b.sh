#!/usr/bin/env bash
# call B: more lockstep rounds of the 24-layer GPT-2 (bf16, half the footprint): the defaults against
# repeat_plans_percent 95, and 95 with prefetch_batch 8 (fewer hand-overs), the trees taking turns.
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
python3 bench/lockstep_ab.py --out $R --models gpt2 --steps 24 --rounds 4 --stop-after 400 \
  --tree repeat95=bench/results/repeat_plans_gpu/repeat_plans_95.json \
  --tree repeat95_batch8=bench/results/repeat_plans_gpu/repeat_plans_95_batch8.json 2>&1 | tee $R/ab.log
cd $OUT && tar -czf records.tgz records && rm -rf records
