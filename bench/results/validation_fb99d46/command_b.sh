#!/usr/bin/env bash
# call B: where the bf16 GPT-2 step waits with eight eviction threads: step 12's timeline of the
# 24-layer GPT-2 (bf16, fused AdamW, half its footprint) with repeat_plans_percent 95, with 95 and
# eight eviction threads, with eight eviction threads alone and at the defaults; then
# tests/test_launcher_gpu.py.
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
D=bench/results/validation_fb99d46
GPT2="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --precision bf16"
for tree in repeat95 repeat95_evict8 evict8 defaults; do
  config=(); [ $tree != defaults ] && config=(--config $D/$tree.json)
  PYTHONPATH=. timeout 70 python3 bench/train.py $GPT2 --mode deepum --capacity 6138363904 --steps 16 \
    --warmup 4 --timeline-step 12 "${config[@]}" -o $R/${tree}_t12.json > $R/${tree}_t12.log 2>&1
  echo "$tree rc=$? at $(( $(date +%s) - T0 )) s"
done
run_tests 150 tests/test_launcher_gpu.py
cd $OUT && tar -czf records.tgz records && rm -rf records
