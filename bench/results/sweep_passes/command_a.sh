#!/usr/bin/env bash
# call A: the sweep on this release's engine and defaults (host_map_keep_uses counted in passes),
# GPT-2 24L, BERT-Large 24L and DLRM at 0.75 and 0.5: none, um and deepum, the UVM-path bound at this
# call's migration probe.
source bench/results/sweep_move_threads/sweep_common.sh
sweep gpt2 "--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
sweep bert-large "--layers 24 --seq 128 --batch 8"
sweep dlrm "--tables 8 --rows 500000 --dim 64 --lookups 32 --batch 2048"
summary
rm -rf $R/sweep/logs
