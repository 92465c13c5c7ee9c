#!/usr/bin/env bash
# call E: the GPU tests call D's time limit cut (learning from the fault log), then the safety and
# launcher GPU tests, on the tree where a session on device memory installs no hook.
source bench/device_setup.sh
timeout 560 python3 -m pytest -v -p no:cacheprovider tests/test_runtime_gpu.py::test_tables_learn_from_the_fault_log_and_training_is_unchanged \
  tests/test_safety_gpu.py tests/test_launcher_gpu.py > $R/gpu_tests.log 2>&1
grep -cE " PASSED" $R/gpu_tests.log; grep -E "(FAILED|ERROR)|passed|failed" $R/gpu_tests.log | tail -8
tar -czf $OUT/e.tgz -C $OUT records; rm -rf $R
