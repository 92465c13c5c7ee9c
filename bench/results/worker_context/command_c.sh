#!/usr/bin/env bash
# call C: does a stream wait for an event of another context hold the calling thread? The launch
# contention probe with kernels that spin 20 us (the GPU behind the launches), the mover ordered by
# events of the launching stream in the same context and from its own context, and by a pinned word.
export DEEPUM_NO_OVERSUBSCRIBE=1 PYTHONUNBUFFERED=1
mkdir -p $OUT/call_c
python3 bench/launch_contention.py --mib 1024 --launches 5000 --repeats 2 --kernel-us 20 \
  --modes none,ordered,ordered_context,words_context -o $OUT/call_c/launch_contention_spin20.json 2>&1 | tail -12
