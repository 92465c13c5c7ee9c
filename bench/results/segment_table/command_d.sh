#!/usr/bin/env bash
# call D: the runtime GPU tests on this tree (training exact under budgets, the engine's counters,
# recall, warm start, sleep and wake).
source bench/device_setup.sh
run_tests() {  # $1 seconds at most, then pytest's arguments
  local limit=$1; shift
  local log=$R/$(echo "$*" | tr ' /."' '____').log
  PYTHONPATH=. timeout $limit python3 -m pytest -q -p no:cacheprovider -rs --durations=5 "$@" > $log 2>&1
  echo "$* rc=$? at $(( $(date +%s) - T0 )) s: $(tail -1 $log)"
}
run_tests 400 tests/test_runtime_gpu.py
tar -czf $OUT/records.tgz -C $OUT records && rm -rf $R
