#!/usr/bin/env bash
# call B: the worker in a CUDA context of its own (DeepUMConfig.worker_context, the default) against
# the worker in the primary context: BERT-Large 24L at half its footprint, 10 steps of which 5
# warm-up, in alternation, twice each, beside one none run.
source bench/device_setup.sh
echo '{"worker_context": false}' > $R/primary.json
echo '{"worker_context": true}' > $R/own.json
BERT="--workload bert-large --layers 24 --seq 128 --batch 8 --steps 10 --warmup 5"
python3 bench/train.py $BERT --mode none -o $R/bert_none.json > $R/bert_none.log 2>&1 || tail -3 $R/bert_none.log
for r in 1 2; do
  for c in primary own; do
    timeout 150 python3 bench/train.py $BERT --mode deepum --capacity 3792699392 --config $R/$c.json \
      -o $R/bert_${c}_r$r.json > $R/bert_${c}_r$r.log 2>&1 || tail -3 $R/bert_${c}_r$r.log
  done
  echo "round $r $(( $(date +%s) - T0 )) s"
done
python3 bench/results/worker_context/summary.py $R
