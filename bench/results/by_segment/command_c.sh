#!/usr/bin/env bash
# call C: the rest of the GPU tests on this tree (each managed segment keeping its allocations):
# tests/test_runtime_gpu.py, then the twenty exits of tests/test_safety_gpu.py.
source bench/device_setup.sh
run_tests() {  # $1 seconds at most, then pytest's arguments
  local limit=$1; shift
  local log=$R/$(echo "$*" | tr ' /."' '____').log
  PYTHONPATH=. timeout $limit python3 -m pytest -q -p no:cacheprovider -rs --durations=5 "$@" > $log 2>&1
  echo "$* rc=$? at $(( $(date +%s) - T0 )) s: $(tail -1 $log)"
}
run_tests 330 tests/test_runtime_gpu.py
run_tests 240 tests/test_safety_gpu.py -k twenty_times
tar -czf $OUT/records.tgz -C $OUT records && rm -rf $R
