#!/usr/bin/env bash
# The predictor's recall of remembered iterations (this tree with recall2.json: recall_iterations 2)
# against the tree before it (7e8165a, built in a copy), on the CPU, from the repository root: the
# policy's decision time on the recorded bf16 GPT-2 trace at half its footprint (bench/policy_cost.py,
# from the fifth iteration, the two builds taking turns twice), each build's replay of the trace, this
# tree's kernel misses, and its replays of the recorded fp32 GPT-2.
set -e
R=bench/results/recalled_window
T=bench/results/unbudgeted_traces/call_a/gpt2_bf16_trace.npz
BEFORE=/tmp/recall_before; rm -rf $BEFORE && mkdir -p $BEFORE && git archive 7e8165a | tar -x -C $BEFORE
(cd $BEFORE && python3 setup.py -q build_ext --inplace > /dev/null)
for round in 1 2; do
  for tree in before this; do
    dir=$([ $tree = before ] && echo $BEFORE || echo .)
    config=$([ $tree = before ] && echo "" || echo "--config $R/recall2.json")
    (cd $dir && python3 bench/policy_cost.py --trace $T --capacity 6138363904 --displace 0,4MiB,16MiB --repeats 3 \
      --from-iteration 4 $config -o $OLDPWD/$R/policy_cost_${tree}_$round.json)
  done
done
(cd $BEFORE && python3 -m deepum replay --policy deepum --capacity 6138363904 --json $T) > $R/replay_before.json
python3 -m deepum replay --policy deepum --capacity 6138363904 --config $R/recall2.json --json $T > $R/replay_this.json
python3 bench/kernel_misses.py --trace $T --capacity 6138363904 --from-iteration 4 --displace 4MiB,16MiB --repeats 3 \
  --config $R/recall2.json -o $R/kernel_misses.json
# The recorded fp32 GPT-2 of the sweep's replays at 0.5 and 0.75 of its footprint, this tree with recall.
for c in 6002049024 9003073536; do
  python3 -m deepum replay bench/results/gpu_check/trace.npz --policy deepum --capacity $c --config $R/recall2.json \
    --json > $R/replay_fp32_gpt2_$c.json
done
