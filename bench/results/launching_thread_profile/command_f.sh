#!/usr/bin/env bash
# call F: the GPU runtime tests on this tree, then the access-pattern and launcher tests as far as the
# call's time allows.
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
for t in tests/test_runtime_gpu.py tests/test_access_patterns_gpu.py tests/test_launcher_gpu.py; do
  left=$(( 585 - ($(date +%s) - T0) )); [ $left -lt 30 ] && break
  name=$(basename $t .py)
  PYTHONPATH=. timeout $left python3 -m pytest -v -p no:cacheprovider -rs --timeout 280 --durations=5 $t > $R/$name.log 2>&1
  echo "$name rc=$? at $(( $(date +%s) - T0 )) s"
  grep -E "PASSED|FAILED|ERROR|SKIPPED|Timeout|passed|failed" $R/$name.log | tail -20
done
