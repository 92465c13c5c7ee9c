#!/usr/bin/env bash
# call B: the GPU safety tests under torch.compile, the runtime, access-pattern and launcher tests on this tree.
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
run() {  # $1 log name, rest: pytest arguments
  local name=$1; shift
  left=$(( 585 - ($(date +%s) - T0) )); [ $left -lt 30 ] && { echo "$name not run: time"; return; }
  PYTHONPATH=. timeout $left python3 -m pytest -v -p no:cacheprovider -rs --timeout 280 --durations=5 "$@" > $R/$name.log 2>&1
  echo "$name rc=$? at $(( $(date +%s) - T0 )) s"
  grep -E "PASSED|FAILED|ERROR|SKIPPED|Timeout|passed|failed" $R/$name.log | tail -20
}
run safety_compiled tests/test_safety_gpu.py -k compiled
run runtime tests/test_runtime_gpu.py
run launcher tests/test_launcher_gpu.py
