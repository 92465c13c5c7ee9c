#!/usr/bin/env bash
# call C: the GPU tests on this tree (far_prefetches "dead_only" by default): tests/test_runtime_gpu.py
# beside tests/test_safety_gpu.py but its twenty exits, beside tests/test_access_patterns_gpu.py and then
# tests/test_launcher_gpu.py (each test's cases are subprocesses under their own fuse).
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
run_tests 400 tests/test_runtime_gpu.py &
run_tests 400 tests/test_safety_gpu.py -k "not twenty_times" &
( run_tests 150 tests/test_access_patterns_gpu.py; run_tests 200 tests/test_launcher_gpu.py ) &
wait
tar -czf $OUT/records.tgz -C $OUT records && rm -rf $R
