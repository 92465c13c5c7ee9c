#!/usr/bin/env bash
# call B: the GPU safety tests on this tree (side streams, CUDA graphs, torch.compile, injected
# failures, exits, ...), then the launcher's (a warm start across processes), as time allows.
source bench/device_setup.sh
for t in tests/test_safety_gpu.py tests/test_launcher_gpu.py; do
  left=$(( 575 - ($(date +%s) - T0) ))
  [ $left -lt 60 ] && { echo "skipped $t: time"; continue; }
  PYTHONPATH=. timeout $left python3 -m pytest -q -p no:cacheprovider -rs --durations=3 $t > $R/$(basename $t .py).log 2>&1
  echo "$t rc=$? at $(( $(date +%s) - T0 )) s: $(tail -1 $R/$(basename $t .py).log)"
  tar -czf $OUT/records.tgz -C $OUT records
done
