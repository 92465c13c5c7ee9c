#!/usr/bin/env bash
# The policy's decision time per launch with 4 MiB written before each (bench/policy_cost.py), two
# checkouts each built in place, BEFORE and AFTER (this one with layout.patch applied), taking turns
# three rounds: GPT-2 bf16 from iteration 8 (its repeated iterations), BERT-Large bf16 from iteration 4
# (its iterations decided in full up to 15). Run from the repository root:
# bash bench/results/policy_layout/time_ab.sh BEFORE AFTER OUT
set -e
BEFORE=$(realpath $1) AFTER=$(realpath $2) OUT=$(realpath -m $3) HERE=$(pwd)
T=$HERE/bench/results/repeat_plans_gpu/call_e
mkdir -p $OUT
for round in 1 2 3; do
  for tree in before after; do
    dir=$AFTER; [ $tree = before ] && dir=$BEFORE
    (cd $dir && python3 bench/policy_cost.py --trace $T/gpt2_bf16_20_trace.npz --capacity 6138363904 \
      --from-iteration 8 --displace 4MiB --repeats 3 -o $OUT/gpt2_${tree}_r$round.json | tail -1)
    (cd $dir && python3 bench/policy_cost.py --trace $T/bert_bf16_20_trace.npz --capacity 3921674240 \
      --from-iteration 4 --displace 4MiB --repeats 3 -o $OUT/bert_${tree}_r$round.json | tail -1)
  done
done
