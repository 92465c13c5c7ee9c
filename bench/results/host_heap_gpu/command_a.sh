#!/usr/bin/env bash
# call A: step timelines of an even and an odd step (12 and 13, then 14 and 15) of the 24-layer GPT-2
# (bf16, fused AdamW, half its footprint) at this tree's defaults, one run a captured step.
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
G="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --precision bf16"
for k in 12 13 14 15; do
  python3 bench/train.py $G --mode deepum --capacity 6138363904 --steps 18 --warmup 4 --timeline-step $k \
    -o $R/gpt2_t$k.json > $R/gpt2_t$k.log 2>&1
  echo "step $k rc=$? at $(( $(date +%s) - T0 )) s: $(tail -1 $R/gpt2_t$k.log)"
done
cd $OUT && tar -czf records.tgz records && rm -rf records
