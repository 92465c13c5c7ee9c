#!/usr/bin/env bash
# call A: tests/test_safety_gpu.py on this tree (four eviction and four prefetch threads, the defaults),
# all but the two torch.compile tests (call B runs them); among them the two-thread case six times over.
source bench/device_setup.sh
timeout $(( 585 - ($(date +%s) - T0) )) python3 -m pytest -q -p no:cacheprovider tests/test_safety_gpu.py -k "not compiled" --durations=0 > $R/gpu_tests_a.log 2>&1
echo "pytest exit $?"; grep -E "passed|failed|error" $R/gpu_tests_a.log | tail -3
echo "done at $(( $(date +%s) - T0 )) s"
