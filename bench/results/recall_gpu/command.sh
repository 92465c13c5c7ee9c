#!/usr/bin/env bash
# This tree at its defaults (recall off) against the same engine with recall_iterations 2
# (bench/results/recalled_window/recall2.json), on the 24-layer GPT-2 and BERT-Large in bf16 with
# fused AdamW at half their footprints, each run in lockstep against the in-memory step
# (bench/no_pressure.py --lockstep --tolerance 1.5, 14 steps of which 4 warm-up), the settings taking
# turns a pair at a time while the call's time lasts. $1: pairs per setting and model at most
# (default 4); $2: seconds after which no new round starts (default 440).
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
GPT2="--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --precision bf16"; GPT2_CAP=6138363904
BERT="--layers 24 --seq 128 --batch 8 --precision bf16"; BERT_CAP=3921674240
RECALL=bench/results/recalled_window/recall2.json
check() {  # $1 folder under $R, $2 workload, $3 size, $4 capacity, $5 pairs in all, $6... extra options
  PYTHONPATH=. python3 bench/no_pressure.py --out $R/$1 --workloads $2 --size "$2=$3" --capacity $2=$4 \
    --lockstep --repeats $5 --steps 14 --warmup 4 --tolerance 1.5 --timeout 150 --resume "${@:6}" 2>&1 | tail -1
}
for pairs in $(seq 1 ${1:-4}); do
  [ $(( $(date +%s) - T0 )) -gt ${2:-440} ] && { echo "stopped before $pairs pairs: time"; break; }
  check gpt2_recall2 gpt2 "$GPT2" $GPT2_CAP $pairs --deepum-config $RECALL
  check gpt2_defaults gpt2 "$GPT2" $GPT2_CAP $pairs
  check bert_recall2 bert-large "$BERT" $BERT_CAP $pairs --deepum-config $RECALL
  check bert_defaults bert-large "$BERT" $BERT_CAP $pairs
  tar -czf $OUT/records.tgz -C $OUT records
done
echo "done at $(( $(date +%s) - T0 )) s"
tar -czf $OUT/records.tgz -C $OUT records && rm -rf $R
