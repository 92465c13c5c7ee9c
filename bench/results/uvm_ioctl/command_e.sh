#!/usr/bin/env bash
# call E: the unified-memory driver's own discard and population (bench/uvm_ioctls.py) beside the
# CUDA driver's: bench/populate_probe.py --uvm-calls over 1 GiB, in 64 MiB and in 2 MiB calls.
export DEEPUM_NO_OVERSUBSCRIBE=1 PYTHONUNBUFFERED=1
mkdir -p $OUT/call_e
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv > $OUT/call_e/gpu.txt
timeout 200 python3 bench/populate_probe.py --uvm-calls -o $OUT/call_e/populate_probe.json 2>&1 | tail -12
timeout 200 python3 bench/populate_probe.py --uvm-calls --chunk-mib 2 -o $OUT/call_e/populate_probe_2mib.json 2>&1 | tail -12
