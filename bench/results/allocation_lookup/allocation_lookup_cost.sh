#!/usr/bin/env bash
# Finding the live allocation that holds an address, and keeping the answer per allocation and free,
# on the CPU (bench/probes/allocation_lookup_cost.cpp): the memory events of the bf16 GPT-2 trace
# recorded without a budget replayed into one ordered map of all live allocations and into sorted
# arrays per managed segment, three rounds, 16 and 128 MiB written between groups of lookups.
# CUDA-free, run on the development machine; writes allocation_lookup_cost.txt beside this script.
HERE=$(dirname "$0"); TMP=$(mktemp -d)
python3 - "$TMP/events.bin" <<'PY'
import sys
import numpy as np
sys.path.insert(0, ".")
from deepum.offline.trace_io import read_trace
t = read_trace("bench/results/unbudgeted_traces/call_a/gpt2_bf16_trace.npz")
np.stack([t.mem_action, t.mem_address, t.mem_bytes], 1).astype(np.int64).tofile(sys.argv[1])
PY
c++ -O2 -std=c++17 -I driver_hooks bench/probes/allocation_lookup_cost.cpp -o "$TMP/allocation_lookup_cost"
{ lscpu | grep -E "Model name|L3"
  for round in 1 2 3; do for mib in 16 128; do
    echo "round $round: $("$TMP/allocation_lookup_cost" "$TMP/events.bin" $mib)"
  done; done; } > "$HERE/allocation_lookup_cost.txt"
rm -rf "$TMP"
