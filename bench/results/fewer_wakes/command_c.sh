#!/usr/bin/env bash
# call C (on call B's machine): the safety GPU tests other than the two torch.compile ones (call B).
source bench/device_setup.sh
PYTHONPATH=. timeout 560 python3 -m pytest -q -p no:cacheprovider -rs --durations=5 tests/test_safety_gpu.py -k "not compiled" \
  > $R/test_safety_gpu.log 2>&1
echo "tests/test_safety_gpu.py -k 'not compiled' rc=$? at $(( $(date +%s) - T0 )) s: $(tail -1 $R/test_safety_gpu.log)"
tar -czf $OUT/records.tgz -C $OUT records && rm -rf $R
