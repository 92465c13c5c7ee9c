#!/usr/bin/env bash
# call H: the prediction window's length for BERT-Large 24L at half its footprint (its kernels are
# short: 32 launches are about a millisecond of GPU time). lookahead 32 (the default), 64 and 128, in
# alternation, twice each, 10 steps of which 5 warm-up, beside one none run.
export DEEPUM_NO_OVERSUBSCRIBE=1 PYTHONUNBUFFERED=1
T0=$(date +%s)
R=$OUT/records; rm -rf $R; mkdir -p $R
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
BERT="--workload bert-large --layers 24 --seq 128 --batch 8 --steps 10 --warmup 5"
python3 bench/train.py $BERT --mode none -o $R/bert_none.json > $R/bert_none.log 2>&1 || tail -3 $R/bert_none.log
for r in 1 2; do
  for la in 32 64 128; do
    echo "{\"lookahead\": $la}" > $R/lookahead_$la.json
    timeout 150 python3 bench/train.py $BERT --mode deepum --capacity 3792699392 --config $R/lookahead_$la.json \
      -o $R/bert_lookahead${la}_r$r.json > $R/bert_lookahead${la}_r$r.log 2>&1 || tail -3 $R/bert_lookahead${la}_r$r.log
  done
  echo "round $r $(( $(date +%s) - T0 )) s"
done
python3 - <<'PY'
import json, os, glob
R = os.environ["OUT"] + "/records"
for f in sorted(glob.glob(R + "/bert_*.json")):
    r = json.load(open(f)); n = os.path.basename(f)[:-5]
    b = r.get("bounds") or {}; s = r.get("stats") or {}
    print(n, r["status"], round(r["step_s_median"], 3), [round(x, 2) for x in r["step_s"]], r["parameter_sha256"][:12],
          "h2d", round((r.get("h2d_bytes_per_step") or 0) / 1e9, 2), "waits", s.get("kernel_waits"),
          "xbound", round(b.get("step_over_uvm_path") or 0, 2))
PY
rm -f $R/build.log $R/prebuild.log $R/*.log
tar -czf $OUT/h.tgz -C $OUT records; rm -rf $R
echo "total $(( $(date +%s) - T0 )) s"
