#!/usr/bin/env bash
# call B: the sweep on this tree, GPT-2 24L, BERT-Large 24L and DLRM at 0.75 and 0.5;
# then the two torch.compile tests of tests/test_safety_gpu.py.
source bench/results/sweep_move_threads/sweep_common.sh
sweep gpt2 "--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
sweep bert-large "--layers 24 --seq 128 --batch 8"
sweep dlrm "--tables 8 --rows 500000 --dim 64 --lookups 32 --batch 2048"
summary
rm -rf $R/sweep/logs
timeout $(( $(left) - 5 )) python3 -m pytest -q -p no:cacheprovider tests/test_safety_gpu.py -k compiled > $R/gpu_tests_b.log 2>&1
echo "pytest exit $?"; grep -E "passed|failed|error" $R/gpu_tests_b.log | tail -3
echo "done at $(( $(date +%s) - T0 )) s"
