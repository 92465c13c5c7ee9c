#!/usr/bin/env bash
# calls A (GPT-2, `command_a.sh gpt2`) and B (BERT-Large, `command_a.sh bert-large`): the policy
# deciding on a thread of its own (the default of this tree, decision_thread) against the launching
# thread deciding (--deepum-config with decision_thread off), each at half the footprint in lockstep
# against the in-memory step (bench/no_pressure.py --lockstep; the verdict against 2.5x, --tolerance
# 1.5). The two settings take turns two pairs at a time (--resume keeps the pairs made before), so a
# drift of the machine's speed over the call falls on both. bf16 with fused AdamW, 14 steps of which 4
# warm-up.
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
W=$1
case $W in
  gpt2) SIZE="--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --precision bf16"; CAP=6138363904 ;;
  bert-large) SIZE="--layers 24 --seq 128 --batch 8 --precision bf16"; CAP=3921674240 ;;
  *) echo "usage: command_a.sh gpt2|bert-large"; exit 2 ;;
esac
echo '{"decision_thread": false}' > $R/launching_thread_decides.json
check() {  # $1 folder under $R, $2 pairs in all, rest: no_pressure.py flags
  local out=$R/$1 pairs=$2; shift 2
  PYTHONPATH=. python3 bench/no_pressure.py --out $out --workloads $W --size "$W=$SIZE" --capacity $W=$CAP \
    --lockstep --repeats $pairs --steps 14 --warmup 4 --tolerance 1.5 --timeout 150 --resume "$@" 2>&1 | tail -1
}
for pairs in 2 4 6; do
  [ $(( $(date +%s) - T0 )) -gt 430 ] && { echo "stopped before $pairs pairs: time"; break; }
  check decision_thread $pairs
  check launching_thread $pairs --deepum-config $R/launching_thread_decides.json
done
echo "done at $(( $(date +%s) - T0 )) s"
