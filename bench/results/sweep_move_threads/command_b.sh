#!/usr/bin/env bash
# call B: the four tests of tests/test_safety_gpu.py call A's limit cut; the sweep on this tree,
# GPT-2 24L, BERT-Large 24L and DLRM at 0.75 and 0.5; then the two torch.compile tests.
source bench/results/sweep_move_threads/sweep_common.sh
timeout 120 python3 -m pytest -v -p no:cacheprovider tests/test_safety_gpu.py --durations=4 \
  -k "kernel_parameter_cache or reenable_with or pool_dropped or device_tensors_made" > $R/gpu_tests_b1.log 2>&1
echo "pytest exit $?"; grep -E "PASS|FAIL|ERROR|passed|failed" $R/gpu_tests_b1.log | tail -6
sweep gpt2 "--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
sweep bert-large "--layers 24 --seq 128 --batch 8"
sweep dlrm "--tables 8 --rows 500000 --dim 64 --lookups 32 --batch 2048"
summary
rm -rf $R/sweep/logs
timeout $(( $(left) - 5 )) python3 -m pytest -v -p no:cacheprovider tests/test_safety_gpu.py -k compiled > $R/gpu_tests_b2.log 2>&1
echo "pytest exit $?"; grep -E "PASS|FAIL|ERROR|passed|failed" $R/gpu_tests_b2.log | tail -3
echo "done at $(( $(date +%s) - T0 )) s"
