#!/usr/bin/env bash
# Replays the recorded traces under deepum's defaults with the engine built in this checkout, writing
# bench/results/far_prefetches/replays/<trace>_<capacity>_<LABEL>.json; then the synthetic irregular
# workloads (bench/irregular.py) to irregular_<LABEL>.json. Run from the repository root, once as
# committed (LABEL committed), and once with each probe applied and the engine rebuilt:
# bench/probes/far_prefetches_take_no_place.patch (LABEL probe) and
# bench/probes/far_prefetches_take_dead_room.patch (LABEL dead_room); summary.py compares them.
set -e
LABEL=${1:?LABEL}
D=bench/results/far_prefetches
mkdir -p $D/replays
while read -r name trace capacity; do
  python3 -m deepum replay "$trace" --policy deepum --capacity "$capacity" --json > "$D/replays/${name}_${capacity}_${LABEL}.json"
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
python3 bench/irregular.py -o $D/irregular_${LABEL}.json > $D/irregular_${LABEL}.txt
