#!/usr/bin/env bash
# call A: repeat_plans_percent on the GPU. Two long GPT-2 runs (bf16, 24 layers, half the footprint,
# 120 steps) at 95 and 100, to see whether repeated plans engage and hold over a long run, then lockstep
# pairs of GPT-2 at the defaults against 95 (bench/lockstep_ab.py, 24 steps a run).
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
GPT2="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --precision bf16"
for p in 95 100; do
  PYTHONPATH=. timeout 120 python3 bench/train.py $GPT2 --mode deepum --capacity 6138363904 --steps 120 \
    --warmup 4 --config bench/results/repeat_plans_gpu/repeat_plans_$p.json -o $R/long_repeat_plans_$p.json \
    > $R/long_repeat_plans_$p.log 2>&1
  echo "long $p rc=$? at $(( $(date +%s) - T0 )) s"
done
python3 bench/lockstep_ab.py --out $R --models gpt2 --steps 24 --rounds 3 --stop-after 280 \
  --tree repeat95=bench/results/repeat_plans_gpu/repeat_plans_95.json 2>&1 | tee $R/ab.log
cd $OUT && tar -czf records.tgz records && rm -rf records
