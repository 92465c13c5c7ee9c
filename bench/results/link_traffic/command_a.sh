#!/usr/bin/env bash
# call A: the policy's decisions on the CPU (the bf16 GPT-2 trace at half its footprint, as
# bench/policy_cost.py replays them) on a quiet machine and while another process keeps a GPU kernel
# reading and writing 1 GiB of pinned host memory over the link, alternated; caches warm (no
# displacement) and with 4 MiB written before each launch.
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
T=bench/results/unbudgeted_traces/call_a/gpt2_bf16_trace.npz
for d in 4MiB 0; do
  PYTHONPATH=. timeout 280 python3 bench/link_traffic_probe.py --trace $T --capacity 6138363904 --displace $d --pairs 3 \
    -o $R/gpt2_bf16_displace_$d.json 2>&1 | tee $R/gpt2_bf16_displace_$d.log
done
echo "done at $(( $(date +%s) - T0 )) s"
