#!/usr/bin/env bash
# call B: the same for ResNet-152 and the MoE (top-2 over 8 experts).
source bench/results/sweep_move_threads/sweep_common.sh
sweep resnet152 "--batch 16 --image 224"
sweep moe "--layers 12 --hidden 768 --heads 12 --seq 512 --batch 2"
summary
rm -rf $R/sweep/logs
