#!/usr/bin/env bash
# call B: drop_to_host off by default: the GPU safety tests that move, discard and train, most telling
# first (the compiled ones, the twenty exits and the module unloads left out: no device time was left).
source bench/device_setup.sh
PYTHONPATH=. timeout $(( 290 - ($(date +%s) - T0) )) python3 -m pytest -v -p no:cacheprovider -rs --timeout 120 tests/test_safety_gpu.py \
  -k "move_threads_keep or side_stream or two_threads_on or cuda_graph or injected or record_stream or empty_cache or after_disable or reenable or exception_in or pool_dropped" > $R/safety.log 2>&1
echo "safety rc=$? at $(( $(date +%s) - T0 )) s"
grep -E "PASSED|FAILED|ERROR|SKIPPED|Timeout|passed|failed" $R/safety.log | tail -30
