#!/usr/bin/env bash
# call A: deepum at half the footprint against the in-memory step, in lockstep: each pair's `none` and
# deepum runs start together and take turns at their steps (bench/lockstep.py), so a drift of the
# shared machine's speed falls on both; five pairs a model, the pair's ratio the median of its step
# ratios, the verdict against 2.5x (--tolerance 1.5) from the sign test's interval of the median pair.
# The 24-layer GPT-2 and BERT-Large in bf16 with fused AdamW, 14 steps of which 4 warm-up.
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
PYTHONPATH=. timeout 560 python3 bench/no_pressure.py --out $R --workloads gpt2,bert-large \
  --size "gpt2=--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --precision bf16" \
  --size "bert-large=--layers 24 --seq 128 --batch 8 --precision bf16" \
  --capacity gpt2=6138363904 --capacity bert-large=3921674240 \
  --lockstep --repeats 5 --steps 14 --warmup 4 --tolerance 1.5 --timeout 150
echo "done at $(( $(date +%s) - T0 )) s"
