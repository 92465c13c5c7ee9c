#!/usr/bin/env bash
# Evictions from 1-8 threads through UVM_MIGRATE beside cudaMemPrefetchAsync, and both directions at
# once through either driver: does the one-migration-at-a-time of the UVM path belong to the CUDA driver?
export DEEPUM_NO_OVERSUBSCRIBE=1 PYTHONUNBUFFERED=1
mkdir -p $OUT
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv > $OUT/gpu.txt
python3 bench/link_paths.py --gib 2 --uvm-calls -o $OUT/link_paths_uvm.json
