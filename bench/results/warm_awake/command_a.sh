#!/usr/bin/env bash
# call A: does a warm start go further when the cold run that wrote it stayed awake from its first
# launch (wake_percent 0, so its state holds the first iteration too)? BERT-Large 24L at half its
# footprint, 8 steps of which 3 warm-up: a cold run writing a state and a warm run reading it, with the
# cold run as by default and with wake_percent 0 (the warm runs as by default), in alternation, twice,
# beside one none run. The records come back as one archive.
source bench/device_setup.sh
echo '{"wake_percent": 0}' > $R/awake.json
echo '{}' > $R/default.json
BERT="--workload bert-large --layers 24 --seq 128 --batch 8 --steps 8 --warmup 3"
python3 bench/train.py $BERT --mode none -o $R/bert_none.json > $R/bert_none.log 2>&1 || tail -3 $R/bert_none.log
for r in 1 2; do
  for c in default awake; do
    rm -f $R/state_${c}_r$r.deepum-warm
    timeout 150 python3 bench/train.py $BERT --mode deepum --capacity 3792699392 --config $R/$c.json \
      --warm-start $R/state_${c}_r$r.deepum-warm -o $R/bert_cold_${c}_r$r.json > $R/bert_cold_${c}_r$r.log 2>&1 || tail -3 $R/bert_cold_${c}_r$r.log
    timeout 150 python3 bench/train.py $BERT --mode deepum --capacity 3792699392 \
      --warm-start $R/state_${c}_r$r.deepum-warm -o $R/bert_warm_${c}_r$r.json > $R/bert_warm_${c}_r$r.log 2>&1 || tail -3 $R/bert_warm_${c}_r$r.log
  done
  echo "round $r $(( $(date +%s) - T0 )) s"
done
python3 - <<'PY'
import json, glob, os
R = os.environ["OUT"] + "/records"
none = json.load(open(R + "/bert_none.json"))
print("none", [round(x, 3) for x in none["step_s"]], none["parameter_sha256"][:12])
for f in sorted(glob.glob(R + "/bert_*_r*.json")):
    r = json.load(open(f)); s = r["stats"]; w = s.get("warm_start") or {}
    first = s["per_iteration"][0] if s.get("per_iteration") else {}
    print(os.path.basename(f)[:-5], r["status"], [round(x, 3) for x in r["step_s"]], r["parameter_sha256"][:12],
          "trial", w.get("state"), w.get("trial"), "it0 launches", first.get("launches"),
          "evict %.2f prefetch %.2f demand %.2f GB" % (first.get("evict_bytes", 0) / 1e9, first.get("prefetch_bytes", 0) / 1e9,
                                                      first.get("demand_prefetch_bytes", 0) / 1e9),
          "faults", r.get("faults_by_step"))
PY
rm -f $R/*.deepum-warm; tar -czf $OUT/a.tgz -C $OUT records; rm -rf $R
