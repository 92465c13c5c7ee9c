#!/usr/bin/env bash
# call D: repeated plans that carry over whole (a repeated iteration records the plan it repeated):
# step 12's timeline of the 24-layer GPT-2 (bf16, half the footprint) with repeat_plans_percent 95 and
# at the defaults, then lockstep pairs of the defaults against 95 (bench/lockstep_ab.py, 24 steps a run).
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
GPT2="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --precision bf16"
for tree in repeat95 defaults; do
  config=(); [ $tree = repeat95 ] && config=(--config bench/results/repeat_plans_gpu/repeat_plans_95.json)
  PYTHONPATH=. timeout 100 python3 bench/train.py $GPT2 --mode deepum --capacity 6138363904 --steps 16 \
    --warmup 4 --timeline-step 12 "${config[@]}" -o $R/${tree}_t12.json > $R/${tree}_t12.log 2>&1
  echo "$tree rc=$? at $(( $(date +%s) - T0 )) s"
done
python3 bench/lockstep_ab.py --out $R --models gpt2 --steps 24 --rounds 3 --stop-after 200 \
  --tree repeat95=bench/results/repeat_plans_gpu/repeat_plans_95.json 2>&1 | tee $R/ab.log
cd $OUT && tar -czf records.tgz records && rm -rf records
