#!/usr/bin/env bash
# call C: the twenty exits of tests/test_safety_gpu.py alone (call B ran them beside the launcher's
# tests and cut them at 240 s), then two more rounds of GPT-2 lockstep pairs: the defaults against
# prefetch_batch 8 (bench/lockstep_ab.py, 24 steps a run).
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
run_tests 330 tests/test_safety_gpu.py -k twenty_times
python3 bench/lockstep_ab.py --out $R --models gpt2 --steps 24 --rounds 2 --stop-after 100 \
  --tree batch8=bench/results/window_reach/batch8.json 2>&1 | tee $R/ab.log
cd $OUT && tar -czf records.tgz records && rm -rf records
