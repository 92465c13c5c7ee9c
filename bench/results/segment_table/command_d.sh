#!/usr/bin/env bash
# call D: the runtime GPU tests on this tree (training exact under budgets, the engine's counters,
# recall, warm start, sleep and wake).
source bench/device_setup.sh
run_tests 400 tests/test_runtime_gpu.py
tar -czf $OUT/records.tgz -C $OUT records && rm -rf $R
