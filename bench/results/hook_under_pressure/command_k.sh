#!/usr/bin/env bash
# call K: a shorter prediction window for the launching thread's sake: lookahead 16 against 32 (the
# default), BERT-Large 24L (10 steps, 5 warm-up) and GPT-2 24L (8 steps, 4 warm-up) at half their
# footprints, in alternation, twice each, beside one none run of each. Records come back as one archive.
source bench/device_setup.sh
BERT="--workload bert-large --layers 24 --seq 128 --batch 8 --steps 10 --warmup 5"
GPT2="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --steps 8 --warmup 4"
python3 bench/train.py $BERT --mode none -o $R/bert_none.json > $R/bert_none.log 2>&1 || tail -3 $R/bert_none.log
python3 bench/train.py $GPT2 --mode none -o $R/gpt2_none.json > $R/gpt2_none.log 2>&1 || tail -3 $R/gpt2_none.log
for la in 16 32; do echo "{\"lookahead\": $la}" > $R/lookahead_$la.json; done
for r in 1 2; do
  for w in bert gpt2; do
    for la in 32 16; do
      [ $w = gpt2 ] && A="$GPT2 --capacity 5961154560" || A="$BERT --capacity 3792699392"
      timeout 150 python3 bench/train.py $A --mode deepum --config $R/lookahead_$la.json --reference $R/${w}_none.json \
        -o $R/${w}_lookahead${la}_r$r.json > $R/${w}_lookahead${la}_r$r.log 2>&1 || tail -3 $R/${w}_lookahead${la}_r$r.log
    done
  done
  echo "round $r $(( $(date +%s) - T0 )) s"
done
python3 bench/results/worker_context/summary.py $R
tar -czf $OUT/k.tgz -C $OUT records; rm -rf $R
