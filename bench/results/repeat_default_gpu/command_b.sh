#!/usr/bin/env bash
# call B (on call A's machine): the twenty exits of tests/test_safety_gpu.py beside
# tests/test_launcher_gpu.py, then lockstep rounds of the 24-layer GPT-2 (bf16, fused AdamW, half its
# footprint; bench/lockstep_ab.py, 24 steps a run): this tree's defaults, repeat_plans_percent 0
# (repeat0.json, the earlier default) and the launch hook of 4145a7a (hook_4145a7a.tgz, before its
# buffers were reused) at this tree's defaults.
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
D=bench/results/repeat_default_gpu
run_tests 300 tests/test_safety_gpu.py -k twenty_times &
run_tests 200 tests/test_launcher_gpu.py &
wait
python3 bench/lockstep_ab.py --out $R --models gpt2 --steps 24 --rounds 6 --stop-after $(( 540 - ($(date +%s) - T0) )) \
  --tree repeat0=$D/repeat0.json --tree hook_4145a7a=$D/hook_4145a7a.tgz 2>&1 | tee $R/ab.log
cd $OUT && tar -czf records.tgz records && rm -rf records
