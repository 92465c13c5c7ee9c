#!/usr/bin/env bash
# call C: the GPU tests that the memory map's answers reach (discards, side streams, graphs, compile,
# injected failures, exits), on this tree: tests/test_safety_gpu.py but the twenty exits.
source bench/device_setup.sh
run_tests 430 tests/test_safety_gpu.py -k "not twenty_times"
tar -czf $OUT/records.tgz -C $OUT records && rm -rf $R
