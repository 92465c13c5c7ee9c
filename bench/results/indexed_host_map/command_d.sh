#!/usr/bin/env bash
# call D: the sweep on this tree, the MoE (top-2 over 8 experts) at 0.75 and 0.5, and GPT-2 24L in bf16
# autocast with fused AdamW at 0.5.
source bench/results/indexed_host_map/sweep_common.sh
sweep moe 0.75,0.5 "--layers 12 --hidden 768 --heads 12 --seq 512 --batch 2"
sweep gpt2 0.5 "--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --precision bf16" bf16
summary
rm -rf $R/sweep/logs $R/bf16/logs; tar -czf $OUT/d.tgz -C $OUT records; rm -rf $R
