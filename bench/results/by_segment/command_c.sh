#!/usr/bin/env bash
# call C: the rest of the GPU tests on this tree (each managed segment keeping its allocations):
# tests/test_runtime_gpu.py, then the twenty exits of tests/test_safety_gpu.py.
source bench/device_setup.sh
run_tests 330 tests/test_runtime_gpu.py
run_tests 240 tests/test_safety_gpu.py -k twenty_times
tar -czf $OUT/records.tgz -C $OUT records && rm -rf $R
