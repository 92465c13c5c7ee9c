#!/usr/bin/env bash
# call B: the same three GPU test files, verbose, each test limited to 150 s (pytest-timeout dumps the
# stacks of a test past it), the launcher and access-pattern files first.
source bench/device_setup.sh
PYTHONPATH=. timeout 540 python3 -m pytest -v -p no:cacheprovider -rs --durations=8 --timeout 150 \
  tests/test_launcher_gpu.py tests/test_access_patterns_gpu.py tests/test_runtime_gpu.py > $R/gpu_tests.log 2>&1
echo "tests rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/gpu_tests.log
grep -E "PASSED|FAILED|ERROR|SKIPPED|Timeout|passed|failed" $R/gpu_tests.log | tail -40
