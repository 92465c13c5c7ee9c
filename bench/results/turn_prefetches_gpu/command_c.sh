#!/usr/bin/env bash
# call C: more lockstep rounds of call A's three settings on the 24-layer GPT-2, on the same machine.
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
D=bench/results/turn_prefetches_gpu
python3 bench/lockstep_ab.py --out $R --models gpt2 --steps 24 --rounds 5 --stop-after 380 \
  --tree r6b8=$D/r6b8.json --tree r6b8r95=$D/r6b8r95.json 2>&1 | tee $R/ab.log
cd $OUT && tar -czf records.tgz records && rm -rf records
