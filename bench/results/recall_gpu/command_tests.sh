#!/usr/bin/env bash
# The runtime GPU tests on this tree, the recall's own first (iterations of two kinds taking turns
# under a budget, recall_iterations 0 and 2, bitwise against none); call B ran it as
# test_recall_follows_the_iteration_two_back_and_training_is_exact, which also asked for fewer misses.
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
PYTHONPATH=. timeout 120 python3 -m pytest -q -p no:cacheprovider -rs -s tests/test_runtime_gpu.py -k recall > $R/test_recall.log 2>&1
echo "recall test rc=$? at $(( $(date +%s) - T0 )) s: $(tail -1 $R/test_recall.log)"
PYTHONPATH=. timeout 400 python3 -m pytest -q -p no:cacheprovider -rs --durations=5 tests/test_runtime_gpu.py -k "not recall" \
  > $R/test_runtime_gpu.log 2>&1
echo "tests/test_runtime_gpu.py rc=$? at $(( $(date +%s) - T0 )) s: $(tail -1 $R/test_runtime_gpu.log)"
tar -czf $OUT/records.tgz -C $OUT records && rm -rf $R
