#!/usr/bin/env bash
# call A: the GPU's busy time as the exact union of the kernel records whatever order they come in
# (driver_hooks/iteration_bins.hpp): BERT-Large 24L at half its footprint with lookahead 16 (whose
# records undercounted before) and 32, 10 steps of which 5 warm-up, beside none; then the runtime GPU
# tests (fault log, timeline, sleep, host mapping). The records come back as one archive.
source bench/device_setup.sh
BERT="--workload bert-large --layers 24 --seq 128 --batch 8 --steps 10 --warmup 5"
python3 bench/train.py $BERT --mode none -o $R/bert_none.json > $R/bert_none.log 2>&1 || tail -3 $R/bert_none.log
for la in 16 32; do
  echo "{\"lookahead\": $la}" > $R/lookahead_$la.json
  timeout 150 python3 bench/train.py $BERT --mode deepum --capacity 3792699392 --config $R/lookahead_$la.json \
    --reference $R/bert_none.json -o $R/bert_lookahead$la.json > $R/bert_lookahead$la.log 2>&1 || tail -3 $R/bert_lookahead$la.log
done
python3 - <<'PY'
import json, os
R = os.environ["OUT"] + "/records"
for la in (16, 32):
    r = json.load(open(f"{R}/bert_lookahead{la}.json")); s = r["stats"]
    print(la, r["status"], round(r["step_s_median"], 3), r["parameter_sha256"][:12], "gpu busy per step %.3f s" % r["gpu_busy_s_per_step"],
          "per iteration (ms)", [round(it.get("gpu_busy_ns", 0) / 1e6) for it in s["per_iteration"]])
print("none", json.load(open(f"{R}/bert_none.json"))["parameter_sha256"][:12])
PY
echo "runs done $(( $(date +%s) - T0 )) s"
timeout $(( 590 - ($(date +%s) - T0) )) python3 -m pytest -q -p no:cacheprovider tests/test_runtime_gpu.py > $R/test_runtime_gpu.log 2>&1; tail -3 $R/test_runtime_gpu.log
tar -czf $OUT/a.tgz -C $OUT records; rm -rf $R
echo "total $(( $(date +%s) - T0 )) s"
