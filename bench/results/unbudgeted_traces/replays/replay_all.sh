#!/usr/bin/env bash
# Replays the traces call A recorded without a budget, under um, deepum and the oracle at the capacities
# their GPU runs used, with the bundled calibration; the bf16 GPT-2 also with the launching thread paced
# as the GPU measured it (gpt2_bf16_launch.json). Run from the repository root.
D=bench/results/unbudgeted_traces
for policy in um deepum oracle; do
  deepum replay $D/call_a/bert_trace.npz --policy $policy --capacity 3811573760 --json > $D/replays/bert_$policy.json
  deepum replay $D/call_a/gpt2_bf16_trace.npz --policy $policy --capacity 6138363904 --json > $D/replays/gpt2_bf16_$policy.json
  deepum replay $D/call_a/gpt2_bf16_trace.npz --policy $policy --capacity 6138363904 \
    --calibration $D/replays/gpt2_bf16_launch.json --json > $D/replays/gpt2_bf16_launch_$policy.json
done
