#!/usr/bin/env bash
# `command_a.sh BATCH PAIRS`: the 24-layer GPT-2 in bf16 with fused AdamW at a larger batch (sequences
# of 512 tokens), at half its footprint, in lockstep against the in-memory step (bench/no_pressure.py
# --lockstep, the verdict against 2.5x with --tolerance 1.5). The footprint is a short `none` run's
# peak reserved memory (the rule the budgets of the batch-4 runs came from), halved for deepum.
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
B=$1; PAIRS=${2:-2}
SIZE="--layers 24 --hidden 1024 --heads 16 --seq 512 --batch $B --precision bf16"
PYTHONPATH=. python3 bench/train.py --workload gpt2 $SIZE --mode none --steps 3 --warmup 1 -o $R/footprint_b$B.json \
  > $R/footprint_b$B.log 2>&1 || { tail -20 $R/footprint_b$B.log; exit 1; }
CAP=$(python3 -c "import json; print(json.load(open('$R/footprint_b$B.json'))['footprint_bytes'] // 2)")
echo "batch $B: footprint $(( CAP * 2 )) bytes, deepum's budget $CAP at $(( $(date +%s) - T0 )) s"
PYTHONPATH=. python3 bench/no_pressure.py --out $R/batch_$B --workloads gpt2 --size "gpt2=$SIZE" --capacity gpt2=$CAP \
  --lockstep --repeats $PAIRS --steps 14 --warmup 4 --tolerance 1.5 --timeout 150 2>&1 | tail -1
echo "done at $(( $(date +%s) - T0 )) s"
tar -czf $OUT/records.tgz -C $OUT records && rm -rf $R
