#!/usr/bin/env bash
# call I: the GPU safety tests with four eviction threads (the default now), torch.compile's apart:
# side streams, two threads on two streams (with and without eviction threads), CUDA graphs,
# injected CUDA failures, exits, errors in a with block, training bitwise equal to none.
source bench/device_setup.sh
timeout 520 python3 -m pytest -q -p no:cacheprovider tests/test_safety_gpu.py -k "not compiled" --durations=8 \
  > $OUT/gpu_tests_i.log 2>&1; echo "pytest exit $?"
tail -25 $OUT/gpu_tests_i.log
rm -rf $R
