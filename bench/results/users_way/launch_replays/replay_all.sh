#!/usr/bin/env bash
# Replays the recorded BERT-Large and GPT-2 traces under um, deepum and the oracle with the bundled
# calibration and with this folder's launching-thread calibrations; run from the repository root.
D=bench/results/users_way/launch_replays
for spec in "bert bench/results/dense_at_half/call_a/bert_trace.npz 3811573760" \
            "gpt2 bench/results/gpu_check/trace.npz 6002049024"; do
  set -- $spec
  for cal in bundled launch hook increment; do
    flag=""; [ $cal != bundled ] && flag="--calibration $D/${1}_$cal.json"
    for policy in um deepum oracle; do
      deepum replay $2 --policy $policy --capacity $3 $flag --json > $D/${1}_${cal}_$policy.json
    done
  done
done
