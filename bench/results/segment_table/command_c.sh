#!/usr/bin/env bash
# call C: the GPU tests that the memory map's answers reach (discards, side streams, graphs, compile,
# injected failures, exits), on this tree: tests/test_safety_gpu.py but the twenty exits.
source bench/device_setup.sh
run_tests() {  # $1 seconds at most, then pytest's arguments
  local limit=$1; shift
  local log=$R/$(echo "$*" | tr ' /."' '____').log
  PYTHONPATH=. timeout $limit python3 -m pytest -q -p no:cacheprovider -rs --durations=5 "$@" > $log 2>&1
  echo "$* rc=$? at $(( $(date +%s) - T0 )) s: $(tail -1 $log)"
}
run_tests 430 tests/test_safety_gpu.py -k "not twenty_times"
tar -czf $OUT/records.tgz -C $OUT records && rm -rf $R
