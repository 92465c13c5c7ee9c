#!/usr/bin/env bash
# call B: the twenty exits of tests/test_safety_gpu.py on this tree (far_prefetches "dead_only" by
# default), the one part of the GPU test files not yet run on it.
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
run_tests 300 tests/test_safety_gpu.py -k twenty_times
tar -czf $OUT/records.tgz -C $OUT records && rm -rf $R
