#!/usr/bin/env bash
# call D: the compiled GPU safety tests, then the runtime, access-pattern and launcher GPU tests.
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
PYTHONPATH=. timeout 200 python3 -m pytest -v -p no:cacheprovider -rs --timeout 150 tests/test_safety_gpu.py -k compiled > $R/safety_compiled.log 2>&1
echo "compiled rc=$? at $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout $(( 590 - ($(date +%s) - T0) )) python3 -m pytest -v -p no:cacheprovider -rs --timeout 150 \
  tests/test_runtime_gpu.py tests/test_access_patterns_gpu.py tests/test_launcher_gpu.py > $R/gpu_tests.log 2>&1
echo "tests rc=$? at $(( $(date +%s) - T0 )) s"
grep -hE "PASSED|FAILED|ERROR|SKIPPED|Timeout|passed|failed" $R/safety_compiled.log $R/gpu_tests.log | tail -45
