#!/usr/bin/env bash
# call E: traces of 20 iterations recorded without a budget (deepum, no warm-up left out) of the 24-layer
# GPT-2 (bf16, fused AdamW) and BERT-Large (bf16), to replay repeated plans over many iterations.
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
G="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --precision bf16"
B="--workload bert-large --layers 24 --seq 128 --batch 8 --precision bf16"
PYTHONPATH=. timeout 120 python3 bench/train.py --mode deepum $G --steps 20 --warmup 0 --record $R/gpt2_bf16_20_trace.npz \
  -o $R/gpt2_bf16_20_recorded.json > $R/gpt2_bf16_20_recorded.log 2>&1; echo "gpt2 rc=$? at $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout 120 python3 bench/train.py --mode deepum $B --steps 20 --warmup 0 --record $R/bert_bf16_20_trace.npz \
  -o $R/bert_bf16_20_recorded.json > $R/bert_bf16_20_recorded.log 2>&1; echo "bert rc=$? at $(( $(date +%s) - T0 )) s"
ls -la $R
