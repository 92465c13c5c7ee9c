#!/usr/bin/env bash
# call C: the sweep on this tree, ResNet-152 and the MoE (top-2 over 8 experts) at 0.75 and 0.5; then
# tests/test_runtime_gpu.py whole in the time left.
source bench/results/sweep_move_threads/sweep_common.sh
sweep resnet152 "--batch 16 --image 224"
sweep moe "--layers 12 --hidden 768 --heads 12 --seq 512 --batch 2"
summary
rm -rf $R/sweep/logs
timeout $(( $(left) - 5 )) python3 -m pytest -q -p no:cacheprovider tests/test_runtime_gpu.py --durations=5 > $R/gpu_tests_c.log 2>&1
echo "pytest exit $?"; grep -E "passed|failed|error" $R/gpu_tests_c.log | tail -3
echo "done at $(( $(date +%s) - T0 )) s"
