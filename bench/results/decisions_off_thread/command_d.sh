#!/usr/bin/env bash
# call D: the committed engine (the launching thread deciding, no probe applied) at half the footprint
# against the in-memory step in lockstep, on the same kind of machine as calls A–C: eight GPT-2 pairs,
# six BERT-Large pairs. bf16 with fused AdamW, 14 steps of which 4 warm-up.
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
check() {  # $1 workload, $2 sizing flags, $3 capacity, $4 pairs
  PYTHONPATH=. python3 bench/no_pressure.py --out $R/committed_engine_$1 --workloads $1 --size "$1=$2" --capacity $1=$3 \
    --lockstep --repeats $4 --steps 14 --warmup 4 --tolerance 1.5 --timeout 150 --resume 2>&1 | tail -1
}
check gpt2 "--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --precision bf16" 6138363904 8
check bert-large "--layers 24 --seq 128 --batch 8 --precision bf16" 3921674240 6
echo "done at $(( $(date +%s) - T0 )) s"
