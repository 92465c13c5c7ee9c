#!/usr/bin/env bash
# What moves while the optimizer's pass runs over the host-mapped moments: the committed step timelines
# of the 24-layer GPT-2 in bf16 with fused AdamW at half its footprint (bench/results/users_way/call_b,
# bench/results/huge_pages/call_a, 4 KiB pages), each cut by bench/replay_phases.py (its last 18
# kernels the optimizer's: the trace's fused AdamW launches), beside the replay of the recorded bf16
# trace's fourth iteration. Runs on the CPU, from the repository root.
OUT=bench/results/optimizer_tail
for t in users_way/call_b/gpt2_defaults_1 users_way/call_b/gpt2_defaults_2 huge_pages/call_a/gpt2_deepum_4k_1 \
         huge_pages/call_a/gpt2_deepum_4k_2; do
  python3 bench/replay_phases.py --trace bench/results/unbudgeted_traces/call_a/gpt2_bf16_trace.npz \
    --capacity 6138363904 --iterations 4 --parts 4 --gpu-timeline bench/results/$t.timeline.npz \
    --gpu-optimizer-kernels 18 -o $OUT/$(basename $(dirname $(dirname $t)))_$(basename $t).json
done
# When the policy decides those moves: the recorded bf16 trace's fourth iteration through the native policy.
python3 bench/optimizer_inputs.py --trace bench/results/unbudgeted_traces/call_a/gpt2_bf16_trace.npz \
  --capacity 6138363904 --iteration 4 -o $OUT/optimizer_inputs.json
