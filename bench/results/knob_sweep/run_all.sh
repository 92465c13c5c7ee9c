#!/usr/bin/env bash
# Each of deepum's main settings moved one at a time on the recorded transformer traces at half their
# footprints (bench/knob_sweep.py; the 20-iteration traces from iteration 10, the others from 3),
# writing <name>.json and <name>.txt here. Run from the repository root; seconds on the CPU.
set -e
D=bench/results/knob_sweep
KNOBS=(--knob host_map_uses=2,3,6 --knob host_map_span_percent=15,50 --knob host_map_keep_uses=0,1,2
       --knob lookahead=16,64,128 --knob 'far_prefetches="evict","skip"' --knob schedule=true
       --knob recall_iterations=6 --knob prefetch_batch=8 --knob repeat_plans_percent=0)
while read -r name trace capacity from; do
  python3 bench/knob_sweep.py --trace "$trace" --capacity "$capacity" --from-iteration "$from" "${KNOBS[@]}" \
    -o "$D/$name.json" > "$D/$name.txt"
done <<'TRACES'
bert_fp32_8 bench/results/unbudgeted_traces/call_a/bert_trace.npz 3794796544 3
bert_fp32_dense bench/results/dense_at_half/call_a/bert_trace.npz 3811573760 3
gpt2_fp32_12l bench/results/gpu_check/trace.npz 6002049024 3
gpt2_bf16_20 bench/results/repeat_plans_gpu/call_e/gpt2_bf16_20_trace.npz 6138363904 10
bert_bf16_20 bench/results/repeat_plans_gpu/call_e/bert_bf16_20_trace.npz 3921674240 10
TRACES
