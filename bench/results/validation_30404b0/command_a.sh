#!/usr/bin/env bash
# call A: the GPU safety tests on this tree, but for the two torch.compile tests (call B runs them).
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
PYTHONPATH=. timeout $(( 590 - ($(date +%s) - T0) )) python3 -m pytest -v -p no:cacheprovider -rs --timeout 280 --durations=5 \
  tests/test_safety_gpu.py -k "not compiled" > $R/safety.log 2>&1
echo "safety rc=$? at $(( $(date +%s) - T0 )) s"
grep -E "PASSED|FAILED|ERROR|SKIPPED|Timeout|passed|failed" $R/safety.log | tail -30
