#!/usr/bin/env bash
# call A: the 24-layer GPT-2 (bf16, fused AdamW, half its footprint) with recall_iterations 6 and
# prefetch_batch 8 (r6b8), the same with repeat_plans_percent 95 (r6b8r95) and the defaults: step 12's
# timeline of each, then lockstep rounds of the three against the in-memory step (24 steps a run).
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
D=bench/results/turn_prefetches_gpu
GPT2="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --precision bf16"
for tree in r6b8 r6b8r95 defaults; do
  config=(); [ $tree != defaults ] && config=(--config $D/$tree.json)
  PYTHONPATH=. timeout 70 python3 bench/train.py $GPT2 --mode deepum --capacity 6138363904 --steps 16 \
    --warmup 4 --timeline-step 12 "${config[@]}" -o $R/${tree}_t12.json > $R/${tree}_t12.log 2>&1
  echo "$tree rc=$? at $(( $(date +%s) - T0 )) s"
done
python3 bench/lockstep_ab.py --out $R --models gpt2 --steps 24 --rounds 4 --stop-after 230 \
  --tree r6b8=$D/r6b8.json --tree r6b8r95=$D/r6b8r95.json 2>&1 | tee $R/ab.log
cd $OUT && tar -czf records.tgz records && rm -rf records
