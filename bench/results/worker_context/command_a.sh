#!/usr/bin/env bash
# call A: do launches still wait for migrations issued from a CUDA context of their own? The launch
# contention probe in all six modes, alternated three times.
export DEEPUM_NO_OVERSUBSCRIBE=1 PYTHONUNBUFFERED=1
mkdir -p $OUT/call_a
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv > $OUT/call_a/gpu.txt
python3 bench/launch_contention.py --mib 1024 --launches 5000 --repeats 3 -o $OUT/call_a/launch_contention.json 2>&1 | tail -25
