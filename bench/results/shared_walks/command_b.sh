#!/usr/bin/env bash
# call B: GPU tests on b098355 (the launcher's, with a warm start across processes in state format 5;
# the runtime's; the access patterns'), on the machine of call A.
source bench/device_setup.sh
for t in tests/test_launcher_gpu.py tests/test_access_patterns_gpu.py tests/test_runtime_gpu.py; do
  left=$(( 575 - ($(date +%s) - T0) ))
  [ $left -lt 60 ] && { echo "skipped $t: time"; continue; }
  PYTHONPATH=. timeout $left python3 -m pytest -q -p no:cacheprovider -rs --durations=3 $t > $R/$(basename $t .py).log 2>&1
  echo "$t rc=$? at $(( $(date +%s) - T0 )) s: $(tail -1 $R/$(basename $t .py).log)"
  tar -czf $OUT/records.tgz -C $OUT records
done
