#!/usr/bin/env bash
# call C: the sweep on this tree, GPT-2 24L and BERT-Large 24L at 0.75 and 0.5 (none, um, deepum;
# 8 steps of which 3 warm-up).
source bench/results/indexed_host_map/sweep_common.sh
sweep gpt2 0.75,0.5 "--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
sweep bert-large 0.75,0.5 "--layers 24 --seq 128 --batch 8"
summary
rm -rf $R/sweep/logs $R/build.log $R/prebuild.log; tar -czf $OUT/c.tgz -C $OUT records; rm -rf $R
