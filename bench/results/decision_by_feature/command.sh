#!/usr/bin/env bash
# The policy's decision per launch on the development CPU, by feature: bench/policy_cost.py on the bf16
# GPT-2 trace recorded without a budget, at half its footprint, with the defaults and with one setting
# changed at a time (configs/), caches warm and with 4 MiB written before each launch, three replays
# each; the whole set alternated twice (records/<setting>_pass<N>.json).
T=bench/results/unbudgeted_traces/call_a/gpt2_bf16_trace.npz
D=bench/results/decision_by_feature
mkdir -p $D/records
for pass in 1 2; do
  for v in defaults eviction_lru no_prefetch no_pre_evict lookahead_16 lookahead_8 foresight_1 no_host_map schedule; do
    config=(); [ $v != defaults ] && config=(--config $D/configs/$v.json)
    python3 bench/policy_cost.py --trace $T --capacity 6138363904 "${config[@]}" --displace 0,4MiB --repeats 3 \
      -o $D/records/${v}_pass$pass.json > /dev/null
  done
done
