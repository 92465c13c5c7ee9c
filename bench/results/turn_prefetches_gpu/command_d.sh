#!/usr/bin/env bash
# call D: lockstep rounds of the 24-layer GPT-2 with repeat_plans_percent 95 alone (this tree's runs)
# and with recall_iterations 6 and prefetch_batch 8 as well (r6b8r95), on the same machine.
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
D=bench/results/turn_prefetches_gpu
python3 bench/lockstep_ab.py --out $R --models gpt2 --steps 24 --rounds 6 --stop-after 330 \
  --tree r6b8r95=$D/r6b8r95.json --deepum-config $D/repeat95.json 2>&1 | tee $R/ab.log
cd $OUT && tar -czf records.tgz records && rm -rf records
