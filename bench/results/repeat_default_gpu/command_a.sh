#!/usr/bin/env bash
# call A: the GPU tests on this tree (repeat_plans_percent 95 by default, the launch hook's reused
# buffers): tests/test_runtime_gpu.py beside tests/test_safety_gpu.py but its twenty exits, two pytest
# processes at once (each test's cases are subprocesses under their own fuse), then
# tests/test_access_patterns_gpu.py.
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
run_tests 330 tests/test_runtime_gpu.py &
run_tests 330 tests/test_safety_gpu.py -k "not twenty_times" &
wait
run_tests 90 tests/test_access_patterns_gpu.py
tar -czf $OUT/records.tgz -C $OUT records && rm -rf $R
