#!/usr/bin/env bash
# call B: the GPU tests that the memory map's answers reach, on this tree (each managed segment
# keeping its allocations): tests/test_safety_gpu.py but the twenty exits, then the launcher's.
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
run_tests() {  # $1 seconds at most, then pytest's arguments
  local limit=$1; shift
  local log=$R/$(echo "$*" | tr ' /."' '____').log
  PYTHONPATH=. timeout $limit python3 -m pytest -q -p no:cacheprovider -rs --durations=5 "$@" > $log 2>&1
  echo "$* rc=$? at $(( $(date +%s) - T0 )) s: $(tail -1 $log)"
}
run_tests 420 tests/test_safety_gpu.py -k "not twenty_times"
run_tests 100 tests/test_launcher_gpu.py
tar -czf $OUT/records.tgz -C $OUT records && rm -rf $R
