#!/usr/bin/env bash
# call D (on call C's machine): the GPU tests on this tree, second part: the twenty exits of
# tests/test_safety_gpu.py, then tests/test_launcher_gpu.py.
source bench/device_setup.sh
run_tests() {  # $1 seconds at most, then pytest's arguments
  local limit=$1; shift
  local log=$R/$(echo "$*" | tr ' /."' '____').log
  PYTHONPATH=. timeout $limit python3 -m pytest -q -p no:cacheprovider -rs --durations=5 "$@" > $log 2>&1
  echo "$* rc=$? at $(( $(date +%s) - T0 )) s: $(tail -1 $log)"
}
run_tests 290 tests/test_safety_gpu.py -k twenty_times
run_tests 120 tests/test_launcher_gpu.py
tar -czf $OUT/records.tgz -C $OUT records && rm -rf $R
