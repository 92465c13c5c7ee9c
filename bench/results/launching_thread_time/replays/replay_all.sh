#!/usr/bin/env bash
# Replays the bf16 GPT-2 trace recorded without a budget under deepum and the oracle at its GPU runs'
# capacity, with the launch-paced calibration of bench/results/unbudgeted_traces/replays and three
# what-ifs made from it: the launching thread at the GPU's pace (launch_cpu_s 45 µs, so that with the
# hook's 20 µs a launch takes 65 µs, as deepum's enqueue of 0.19-0.25 s over 3,340 launches), the
# directions' rates the GPU's step timeline shows over the copies' busy time (in 32 GB/s, out by the
# eviction threads 51 GB/s), and both. Run from the repository root.
set -euo pipefail
D=bench/results/launching_thread_time/replays
T=bench/results/unbudgeted_traces/call_a/gpt2_bf16_trace.npz
for calibration in pace rates both; do
  for policy in deepum oracle; do
    deepum replay $T --policy $policy --capacity 6138363904 --calibration $D/gpt2_bf16_$calibration.json --json \
      > $D/gpt2_bf16_${calibration}_$policy.out.json
  done
done
