#!/usr/bin/env bash
# call A: do launches still wait for migrations the mover issues as UVM_MIGRATE ioctls on the
# unified-memory driver's file, with no CUDA call on its thread? The launch contention probe beside
# cudaMemPrefetchAsync calls, empty kernels and kernels of 20 us, alternated three times.
export DEEPUM_NO_OVERSUBSCRIBE=1 PYTHONUNBUFFERED=1
mkdir -p $OUT/call_a
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv > $OUT/call_a/gpu.txt
MODES=none,calls,ordered,ioctl,ordered_ioctl
python3 bench/launch_contention.py --mib 1024 --launches 5000 --repeats 3 --modes $MODES \
  -o $OUT/call_a/launch_contention.json 2>&1 | tail -16
python3 bench/launch_contention.py --mib 1024 --launches 5000 --repeats 3 --kernel-us 20 --modes $MODES \
  -o $OUT/call_a/launch_contention_20us.json 2>&1 | tail -16
