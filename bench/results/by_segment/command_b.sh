#!/usr/bin/env bash
# call B: the GPU tests that the memory map's answers reach, on this tree (each managed segment
# keeping its allocations): tests/test_safety_gpu.py but the twenty exits, then the launcher's.
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
run_tests 420 tests/test_safety_gpu.py -k "not twenty_times"
run_tests 100 tests/test_launcher_gpu.py
tar -czf $OUT/records.tgz -C $OUT records && rm -rf $R
