#!/usr/bin/env bash
# call C: four prefetch threads and four eviction threads the defaults: tests/test_safety_gpu.py whole.
source bench/device_setup.sh
timeout 520 python3 -m pytest -q -p no:cacheprovider tests/test_safety_gpu.py --durations=8 > $R/gpu_tests_c.log 2>&1
echo "pytest exit $?"; tail -14 $R/gpu_tests_c.log
echo "done at $(( $(date +%s) - T0 )) s"
tar -czf $OUT/c.tgz -C $OUT records; rm -rf $R
