#!/usr/bin/env bash
# Replays the recorded transformer traces under deepum's defaults (repeat_plans_percent 95) and with
# repeat_plans_percent 90 (percent90.json), writing replays/<trace>_<setting>.json. Run from the
# repository root; summary.py compares them.
set -e
D=bench/results/repeat_plans_90
while read -r name trace capacity; do
  python3 -m deepum replay "$trace" --policy deepum --capacity "$capacity" --json > "$D/replays/${name}_95.json"
  python3 -m deepum replay "$trace" --policy deepum --capacity "$capacity" --config "$D/percent90.json" --json \
    > "$D/replays/${name}_90.json"
done <<LIST
bert_fp32_10 bench/results/dense_at_half/call_a/bert_trace.npz 3811573760
gpt2_fp32_8 bench/results/gpu_check/trace.npz 6002049024
bert_bf16_20 bench/results/repeat_plans_gpu/call_e/bert_bf16_20_trace.npz 3921674240
gpt2_bf16_20 bench/results/repeat_plans_gpu/call_e/gpt2_bf16_20_trace.npz 6138363904
LIST
