#!/usr/bin/env bash
# call A: a warm start's first step beside plain PyTorch's own first step, on the current tree, at half
# each sweep workload's footprint: none, um, deepum cold writing the state and deepum warm reading it.
source bench/device_setup.sh
B=${BUDGET:-0.5}
left() { echo $(( 585 - ($(date +%s) - T0) )); }
for W in gpt2 bert-large resnet152 dlrm moe; do
  [ $(left) -lt 100 ] && { echo "no time for $W"; continue; }
  PYTHONPATH=. timeout $(left) python3 bench/warm_start_gpu.py --out $R/warm_$W --footprint-from bench/results/sweep_sizes \
    --workloads $W --budget $B --steps 8 --timeout 200 \
    --size "gpt2=--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4" --size "bert-large=--layers 24 --seq 128 --batch 8" \
    --size "resnet152=--batch 16 --image 224" --size "dlrm=--tables 8 --rows 500000 --dim 64 --lookups 32 --batch 2048" \
    --size "moe=--layers 12 --hidden 768 --heads 12 --seq 512 --batch 2" > $R/warm_$W.log 2>&1
  echo "$W at $B: $(tail -1 $R/warm_$W.log) at $(( $(date +%s) - T0 )) s"
  rm -f $R/warm_$W/*.deepum-warm
done
tar -czf $OUT/records.tgz -C $OUT records; rm -rf $R
