#!/usr/bin/env bash
# call C: the 24-layer GPT-2 (bf16, fused AdamW, half its footprint) with glibc's heap kept (this tree's
# default, keep_host_heap) and given back as before (heap_off.json): every thread sampled while step 12
# is issued, once each, then lockstep rounds of the two (bench/lockstep_ab.py, 24 steps a run).
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
D=bench/results/host_heap_gpu
G="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --precision bf16"
for run in kept:none off:$D/heap_off.json; do
  name=${run%%:*}; config=${run#*:}
  extra=$([ "$config" = none ] || echo "--config $config")
  python3 bench/train.py $G --mode deepum --capacity 6138363904 --steps 16 --warmup 4 --sample-thread-step 12 $extra \
    -o $R/gpt2_$name.json > $R/gpt2_$name.log 2>&1
  echo "$name rc=$? at $(( $(date +%s) - T0 )) s: $(tail -1 $R/gpt2_$name.log)"
done
python3 bench/lockstep_ab.py --out $R/ab --models gpt2 --steps 24 --rounds 6 --stop-after $(( 470 - ($(date +%s) - T0) )) \
  --tree heap_off=$D/heap_off.json 2>&1 | tee $R/ab.log
cd $OUT && tar -czf records.tgz records && rm -rf records
