#!/usr/bin/env bash
# call B: this tree as committed (call A's tree with a move pool's threads woken one for a single
# command handed over and all at once for more), the 24-layer GPT-2 and BERT-Large in bf16 with fused
# AdamW at half their footprints in lockstep against the in-memory step (as call A, without the
# engine before), a pair of each at a time; then the two torch.compile safety tests, the access-pattern
# and the launcher's GPU tests. $1: pairs per model at most (default 3).
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
GPT2="--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --precision bf16"; GPT2_CAP=6138363904
BERT="--layers 24 --seq 128 --batch 8 --precision bf16"; BERT_CAP=3921674240
check() {  # $1 folder under $R, $2 workload, $3 size, $4 capacity, $5 pairs in all
  PYTHONPATH=. python3 bench/no_pressure.py --out $R/$1 --workloads $2 --size "$2=$3" --capacity $2=$4 \
    --lockstep --repeats $5 --steps 14 --warmup 4 --tolerance 1.5 --timeout 150 --resume 2>&1 | tail -1
}
for pairs in $(seq 1 ${1:-3}); do
  [ $(( $(date +%s) - T0 )) -gt 220 ] && { echo "stopped before $pairs pairs: time"; break; }
  check gpt2_this_tree gpt2 "$GPT2" $GPT2_CAP $pairs
  check bert_this_tree bert-large "$BERT" $BERT_CAP $pairs
  tar -czf $OUT/records.tgz -C $OUT records
done
echo "lockstep done at $(( $(date +%s) - T0 )) s"
for t in "tests/test_safety_gpu.py -k compiled" tests/test_access_patterns_gpu.py tests/test_launcher_gpu.py; do
  log=$R/$(echo $t | tr ' /.' '___').log
  PYTHONPATH=. timeout 150 python3 -m pytest -q -p no:cacheprovider -rs --durations=3 $t > $log 2>&1
  echo "$t rc=$? at $(( $(date +%s) - T0 )) s: $(tail -1 $log)"
done
tar -czf $OUT/records.tgz -C $OUT records && rm -rf $R
