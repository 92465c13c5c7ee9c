#!/usr/bin/env bash
# The hook's hand-over of moves split in three (bench/probes/submit_split.patch, applied over this
# tree on the GPU machine): ordering the plan's moves and finding their blocks, the marks and events
# they run after, and the worker's hand-over to the move threads; with the count of hand-overs and of
# commands. The 24-layer GPT-2 and BERT-Large in bf16 at half their footprints, lockstep against the
# in-memory step (bench/no_pressure.py), at the defaults and with recall_iterations 2, one pair each.
git apply bench/probes/submit_split.patch || exit 1
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
GPT2="--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --precision bf16"; GPT2_CAP=6138363904
BERT="--layers 24 --seq 128 --batch 8 --precision bf16"; BERT_CAP=3921674240
RECALL=bench/results/recalled_window/recall2.json
check() {  # $1 folder under $R, $2 workload, $3 size, $4 capacity, $5... extra options
  PYTHONPATH=. python3 bench/no_pressure.py --out $R/$1 --workloads $2 --size "$2=$3" --capacity $2=$4 \
    --lockstep --repeats 1 --steps 14 --warmup 4 --tolerance 1.5 --timeout 150 "${@:5}" 2>&1 | tail -1
}
check gpt2_defaults gpt2 "$GPT2" $GPT2_CAP
check gpt2_recall2 gpt2 "$GPT2" $GPT2_CAP --deepum-config $RECALL
check bert_defaults bert-large "$BERT" $BERT_CAP
check bert_recall2 bert-large "$BERT" $BERT_CAP --deepum-config $RECALL
echo "done at $(( $(date +%s) - T0 )) s"
tar -czf $OUT/records.tgz -C $OUT records && rm -rf $R
