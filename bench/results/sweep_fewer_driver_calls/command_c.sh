#!/usr/bin/env bash
# call C (given inline on the machine of calls A and B, with the device time left): the GPU safety
# tests but the two torch.compile ones, cut at 500 s.
source bench/device_setup.sh
PYTHONPATH=. timeout 500 python3 -m pytest -q -p no:cacheprovider -rs --durations=5 tests/test_safety_gpu.py -k "not compiled" \
  > $R/test_safety_gpu.log 2>&1
echo "rc=$? at $(( $(date +%s) - T0 )) s: $(tail -1 $R/test_safety_gpu.log)"
tail -15 $R/test_safety_gpu.log
