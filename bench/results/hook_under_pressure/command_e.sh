#!/usr/bin/env bash
# call E: recycled events (driver_hooks/event_pool.hpp) against the tree before (9f891ae, carried as a
# git archive): BERT-Large 24L (12 steps, 6 of warm-up) and GPT-2 24L (10 steps, 5 of warm-up) at half
# their footprints, in alternation, twice each, beside one none run of each.
export DEEPUM_NO_OVERSUBSCRIBE=1 PYTHONUNBUFFERED=1
T0=$(date +%s)
R=$OUT/records; rm -rf $R; mkdir -p $R
build() {
  python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
  PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
}
build
rm -rf /tmp/base && mkdir -p /tmp/base && tar -xzf out/base.tgz -C /tmp/base && (cd /tmp/base && build)
echo "built in $(( $(date +%s) - T0 )) s"
GPT2="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --steps 10 --warmup 5"
BERT="--workload bert-large --layers 24 --seq 128 --batch 8 --steps 12 --warmup 6"
python3 bench/train.py $GPT2 --mode none -o $R/gpt2_none.json > $R/gpt2_none.log 2>&1 || tail -3 $R/gpt2_none.log
python3 bench/train.py $BERT --mode none -o $R/bert_none.json > $R/bert_none.log 2>&1 || tail -3 $R/bert_none.log
for r in 1 2; do
  for w in bert gpt2; do
    [ $w = gpt2 ] && A="$GPT2 --capacity 5961154560" || A="$BERT --capacity 3792699392"
    (cd /tmp/base && python3 bench/train.py $A --mode deepum -o $R/${w}_before_r$r.json > $R/${w}_before_r$r.log 2>&1) || tail -3 $R/${w}_before_r$r.log
    python3 bench/train.py $A --mode deepum -o $R/${w}_pool_r$r.json > $R/${w}_pool_r$r.log 2>&1 || tail -3 $R/${w}_pool_r$r.log
  done
  echo "round $r $(( $(date +%s) - T0 )) s"
done
python3 - <<'PY'
import json, os, glob
R = os.environ["OUT"] + "/records"
for f in sorted(glob.glob(R + "/*.json")):
    r = json.load(open(f)); n = os.path.basename(f)[:-5]
    b = r.get("bounds") or {}; h = r.get("hook_split_s_per_step") or {}
    print(n, r["status"], round(r["step_s_median"], 3), [round(x, 2) for x in r["step_s"]], r["parameter_sha256"][:12],
          "hook", round(r.get("hook_s_per_step") or 0, 3), "submit", round(h.get("submit", 0), 3), "wait", round(h.get("wait", 0), 3),
          "policy", round(h.get("policy", 0), 3), "drv", round(r.get("launch_driver_s_per_step") or 0, 3),
          "enq", round(r.get("enqueue_s_median") or 0, 3), "xbound", round(b.get("step_over_uvm_path") or 0, 2))
PY
rm -f $R/build.log $R/prebuild.log
tar -czf $OUT/e.tgz -C $OUT records; rm -rf $R
echo "total $(( $(date +%s) - T0 )) s"
