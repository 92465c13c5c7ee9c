#!/usr/bin/env bash
# call B: the same for ResNet-152 and the MoE (top-2 over 8 experts).
source bench/results/sweep_move_threads/sweep_common.sh
sweep_part b
