#!/usr/bin/env bash
# The predictor's kernel misses on the recorded bf16 GPT-2 trace (24 layers, fused AdamW, recorded
# without a budget) at half its footprint, and what they cost the policy's decision on this CPU.
# Runs on the CPU, from the repository root.
python3 bench/kernel_misses.py --trace bench/results/unbudgeted_traces/call_a/gpt2_bf16_trace.npz \
  --capacity 6138363904 --from-iteration 4 --displace 0,4MiB,16MiB --repeats 3 \
  -o bench/results/kernel_misses/gpt2_bf16.json
