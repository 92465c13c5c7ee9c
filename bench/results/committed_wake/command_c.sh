#!/usr/bin/env bash
# call C: the GPU tests on this tree, first part: tests/test_safety_gpu.py but the twenty exits (call D),
# then tests/test_access_patterns_gpu.py.
source bench/device_setup.sh
run_tests() {  # $1 seconds at most, then pytest's arguments
  local limit=$1; shift
  local log=$R/$(echo "$*" | tr ' /."' '____').log
  PYTHONPATH=. timeout $limit python3 -m pytest -q -p no:cacheprovider -rs --durations=5 "$@" > $log 2>&1
  echo "$* rc=$? at $(( $(date +%s) - T0 )) s: $(tail -1 $log)"
}
run_tests 420 tests/test_safety_gpu.py -k "not twenty_times"
run_tests 90 tests/test_access_patterns_gpu.py
tar -czf $OUT/records.tgz -C $OUT records && rm -rf $R
