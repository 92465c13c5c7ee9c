#!/usr/bin/env bash
# The memory map's lookups per command on the CPU (bench/probes/map_lookup_cost.cpp) over the 246
# managed segments of the bf16 GPT-2 trace recorded without a budget, with the segments in ordered
# maps (the tree of $1, default e306fdd) against the flat segment table of this tree, three rounds
# taking turns, 16 and 128 MiB written between groups. CUDA-free, run on the development machine;
# writes map_lookup_cost.txt beside this script.
HERE=$(dirname "$0"); BASE=${1:-e306fdd}; TMP=$(mktemp -d)
mkdir -p "$TMP/base" && git archive "$BASE" driver_hooks | tar -x -C "$TMP/base"
python3 - "$TMP/segments.bin" <<'PY'
import sys
import numpy as np
sys.path.insert(0, ".")
from deepum.offline.trace_io import read_trace
from deepum.offline.trace_format import MEM_SEGMENT_ALLOC
t = read_trace("bench/results/unbudgeted_traces/call_a/gpt2_bf16_trace.npz")
made = t.mem_action == MEM_SEGMENT_ALLOC
np.stack([t.mem_address[made], t.mem_bytes[made]], 1).astype(np.int64).tofile(sys.argv[1])
PY
c++ -O2 -std=c++17 -I "$TMP/base/driver_hooks" bench/probes/map_lookup_cost.cpp -o "$TMP/maps"
c++ -O2 -std=c++17 -I driver_hooks bench/probes/map_lookup_cost.cpp -o "$TMP/table"
{ lscpu | grep -E "Model name|L3"
  for round in 1 2 3; do for tree in maps table; do for mib in 16 128; do
    echo "$tree ($([ $tree = maps ] && echo "$BASE" || echo "this tree")), round $round: $("$TMP/$tree" "$TMP/segments.bin" $mib | tail -1)"
  done; done; done; } > "$HERE/map_lookup_cost.txt"
rm -rf "$TMP"
