#!/usr/bin/env bash
# call C: the twenty exits of tests/test_safety_gpu.py, then lockstep rounds of the 24-layer GPT-2
# (bf16, fused AdamW, half its footprint; bench/lockstep_ab.py, 24 steps a run): the defaults against
# repeat_plans_percent 95, and 95 with eight eviction threads.
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
D=bench/results/validation_fb99d46
run_tests 330 tests/test_safety_gpu.py -k twenty_times
python3 bench/lockstep_ab.py --out $R --models gpt2 --steps 24 --rounds 3 --stop-after $(( 480 - ($(date +%s) - T0) )) \
  --tree repeat95=$D/repeat95.json --tree repeat95_evict8=$D/repeat95_evict8.json 2>&1 | tee $R/ab.log
cd $OUT && tar -czf records.tgz records && rm -rf records
