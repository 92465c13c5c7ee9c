#!/usr/bin/env bash
# call I: moves issued early but in order. The tree as is (base) against the same tree with
# bench/probes/evictions_at_last_use.patch (an eviction waits for the work up to its victims' last
# use on the launching stream instead of the decision point; a prefetch waits for every eviction and
# discard decided before it instead of the decision point; discards, populations and mappings as
# before): GPT-2 24L and BERT-Large 24L at half their footprints, in alternation, twice each, beside
# one none run of each.
export DEEPUM_NO_OVERSUBSCRIBE=1 PYTHONUNBUFFERED=1
T0=$(date +%s)
R=$OUT/records; rm -rf $R; mkdir -p $R
build() {
  python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
  PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
}
build
rm -rf /tmp/v1 && mkdir /tmp/v1 && tar --exclude=./bench/results --exclude=./out --exclude=./.git -cf - . | tar -xf - -C /tmp/v1
(cd /tmp/v1 && patch -p1 < bench/probes/evictions_at_last_use.patch > /dev/null && build)
grep -c "recent_" /tmp/v1/driver_hooks/engine.hpp
echo "built in $(( $(date +%s) - T0 )) s"
GPT2="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --capacity 5961154560"
BERT="--workload bert-large --layers 24 --seq 128 --batch 8 --capacity 3792699392"
python3 bench/train.py ${GPT2% --capacity*} --mode none --steps 7 --warmup 3 -o $R/gpt2_none.json > /dev/null 2>&1 || echo "gpt2 none failed"
python3 bench/train.py ${BERT% --capacity*} --mode none --steps 7 --warmup 3 -o $R/bert_none.json > /dev/null 2>&1 || echo "bert none failed"
for r in 1 2; do
  for w in gpt2 bert; do
    [ $w = gpt2 ] && A=$GPT2 || A=$BERT
    python3 bench/train.py $A --mode deepum --steps 7 --warmup 3 -o $R/${w}_base_r$r.json > $R/${w}_base_r$r.log 2>&1 || tail -3 $R/${w}_base_r$r.log
    (cd /tmp/v1 && python3 bench/train.py $A --mode deepum --steps 7 --warmup 3 -o $R/${w}_lastuse_r$r.json > $R/${w}_lastuse_r$r.log 2>&1) || tail -3 $R/${w}_lastuse_r$r.log
  done
  echo "round $r $(( $(date +%s) - T0 )) s"
done
python3 - <<'PY'
import json, os, glob
R = os.environ["OUT"] + "/records"
for f in sorted(glob.glob(R + "/*.json")):
    r = json.load(open(f)); n = os.path.basename(f)[:-5]
    b = r.get("bounds") or {}
    print(n, r["status"], round(r["step_s_median"], 3), [round(x, 2) for x in r["step_s"]], r["parameter_sha256"][:12],
          "hook", round(r.get("hook_s_per_step") or 0, 3), "drv", round(r.get("launch_driver_s_per_step") or 0, 3),
          "h2d", round((r.get("h2d_bytes_per_step") or 0) / 1e9, 2), "d2h", round((r.get("d2h_bytes_per_step") or 0) / 1e9, 2),
          "xbound", round(b.get("step_over_uvm_path") or 0, 2), "faults", round(r.get("faults_per_step") or 0))
PY
rm -f $R/build.log $R/prebuild.log
tar -czf $OUT/i.tgz -C $OUT records; rm -rf $R
echo "total $(( $(date +%s) - T0 )) s"
