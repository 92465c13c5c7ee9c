#!/usr/bin/env bash
# call D: more lockstep rounds of call C's three settings on the 24-layer GPT-2 (bf16, fused AdamW,
# half its footprint; bench/lockstep_ab.py, 24 steps a run), on the same machine, while device time lasts.
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
D=bench/results/validation_fb99d46
python3 bench/lockstep_ab.py --out $R --models gpt2 --steps 24 --rounds 4 --stop-after 300 \
  --tree repeat95=$D/repeat95.json --tree repeat95_evict8=$D/repeat95_evict8.json 2>&1 | tee $R/ab.log
cd $OUT && tar -czf records.tgz records && rm -rf records
