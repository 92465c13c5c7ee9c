#!/usr/bin/env bash
# call A: the sweep on this release's engine and defaults (host_map_keep_uses counted in passes),
# GPT-2 24L, BERT-Large 24L and DLRM at 0.75 and 0.5: none, um and deepum, the UVM-path bound at this
# call's migration probe.
source bench/results/sweep_move_threads/sweep_common.sh
sweep_part a
