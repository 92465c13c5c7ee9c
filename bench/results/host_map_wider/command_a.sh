#!/usr/bin/env bash
# call A: host mapping beyond the optimizer's state, for BERT-Large 24L at half its footprint (its GPU
# is idle most of a step under pressure): the default (host_map_uses 4, host_map_span_percent 25), the
# span widened to the whole iteration, and both widened (16 uses); in alternation, twice each, 10 steps
# of which 5 warm-up, beside one none run. The records come back as one archive.
source bench/device_setup.sh
echo '{}' > $R/default.json
echo '{"host_map_span_percent": 100}' > $R/span100.json
echo '{"host_map_span_percent": 100, "host_map_uses": 16}' > $R/span100_uses16.json
BERT="--workload bert-large --layers 24 --seq 128 --batch 8 --steps 10 --warmup 5"
python3 bench/train.py $BERT --mode none -o $R/bert_none.json > $R/bert_none.log 2>&1 || tail -3 $R/bert_none.log
for r in 1 2; do
  for c in default span100 span100_uses16; do
    timeout 150 python3 bench/train.py $BERT --mode deepum --capacity 3792699392 --config $R/$c.json \
      -o $R/bert_${c}_r$r.json > $R/bert_${c}_r$r.log 2>&1 || tail -3 $R/bert_${c}_r$r.log
  done
  echo "round $r $(( $(date +%s) - T0 )) s"
done
python3 bench/results/worker_context/summary.py $R
python3 - <<'PY'
import json, glob, os
for f in sorted(glob.glob(os.environ["OUT"] + "/records/bert_*_r*.json")):
    r = json.load(open(f)); s = r["stats"]
    print(os.path.basename(f)[:-5], "h2d %.2f d2h %.2f GB/step" % (r["h2d_bytes_per_step"] / 1e9, r["d2h_bytes_per_step"] / 1e9),
          "mapped %.2f GB" % (s["host_map_bytes"] / 1e9), "gpu busy %.3f s" % (r.get("gpu_busy_s_per_step") or 0))
PY
tar -czf $OUT/a.tgz -C $OUT records; rm -rf $R
