#!/usr/bin/env bash
# Replays the recorded traces with host_map_keep_uses 0 (keep0.json: every block host mapping chooses
# is mapped) and 3 (keep3.json), writing replays/<trace>_<capacity>_<setting>.json, then the synthetic
# irregular workloads with both as variants (bench/irregular.py) to irregular.json and irregular.txt.
# Run from the repository root, two replays at a time; summary.py compares them.
set -e
D=bench/results/keep_migrated
mkdir -p $D/replays
while read -r name trace capacity; do
  for setting in keep0 keep3; do
    python3 -m deepum replay "$trace" --policy deepum --capacity "$capacity" --config "$D/$setting.json" --json \
      > "$D/replays/${name}_${capacity}_${setting}.json" &
  done
  wait
done <<LIST
gpt2_bf16_20 bench/results/repeat_plans_gpu/call_e/gpt2_bf16_20_trace.npz 6138363904
bert_bf16_20 bench/results/repeat_plans_gpu/call_e/bert_bf16_20_trace.npz 3921674240
gpt2_bf16_8 bench/results/unbudgeted_traces/call_a/gpt2_bf16_trace.npz 0.5
gpt2_bf16_8 bench/results/unbudgeted_traces/call_a/gpt2_bf16_trace.npz 0.75
bert_fp32_8 bench/results/unbudgeted_traces/call_a/bert_trace.npz 0.5
bert_fp32_8 bench/results/unbudgeted_traces/call_a/bert_trace.npz 0.75
bert_fp32_dense bench/results/dense_at_half/call_a/bert_trace.npz 0.5
bert_fp32_dense bench/results/dense_at_half/call_a/bert_trace.npz 0.75
gpt2_fp32_12l bench/results/gpu_check/trace.npz 0.5
gpt2_fp32_12l bench/results/gpu_check/trace.npz 0.75
LIST
python3 bench/irregular.py --config $D/keep0.json --config $D/keep3.json -o $D/irregular.json > $D/irregular.txt
