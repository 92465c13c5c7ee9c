#!/usr/bin/env bash
# call C: step 12's timeline of the 24-layer GPT-2 (bf16, half the footprint) at the defaults and with
# repeat_plans_percent 95, alternated twice (bench/train.py --timeline-step 12), to see where a step
# goes once the decision's time is halved.
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
GPT2="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --precision bf16"
for round in 1 2; do
  for tree in defaults repeat95; do
    config=(); [ $tree = repeat95 ] && config=(--config bench/results/repeat_plans_gpu/repeat_plans_95.json)
    PYTHONPATH=. timeout 100 python3 bench/train.py $GPT2 --mode deepum --capacity 6138363904 --steps 16 \
      --warmup 4 --timeline-step 12 "${config[@]}" -o $R/${tree}_r$round.json > $R/${tree}_r$round.log 2>&1
    echo "$tree r$round rc=$? at $(( $(date +%s) - T0 )) s"
  done
done
cd $OUT && tar -czf records.tgz records && rm -rf records
