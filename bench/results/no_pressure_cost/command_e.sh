#!/usr/bin/env bash
# call E: the allocation path without pressure before (the tree before the memory map's asleep mode,
# carried as out/base.tgz) and after, bench/hook_cost.py --allocating three times each in alternation;
# the GPU tests of sleep, host mapping, embeddings, the timeline, side streams and two threads.
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; rm -rf $R; mkdir -p $R
build() {
  python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
  PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
}
build
rm -rf /tmp/base && mkdir -p /tmp/base && tar -xf out/base.tgz -C /tmp/base && cp bench/hook_cost.py /tmp/base/bench/
(cd /tmp/base && build)
echo "built in $(( $(date +%s) - T0 )) s"
for r in 1 2 3; do
  (cd /tmp/base && python3 bench/hook_cost.py --allocating --cases none,deepum -o $R/hook_cost_allocating_before_r$r.json > /dev/null 2>&1) || echo "before r$r failed"
  python3 bench/hook_cost.py --allocating --cases none,deepum -o $R/hook_cost_allocating_after_r$r.json > /dev/null 2>&1 || echo "after r$r failed"
done
python3 - <<'PY'
import json, glob, os
R = os.environ["OUT"] + "/records"
for f in sorted(glob.glob(R + "/hook_cost_allocating_*.json")):
    c = json.load(open(f))["cases"]
    print(os.path.basename(f), round(c["none"]["wall_ns_per_launch_median"]), round(c["deepum"]["wall_ns_per_launch_median"]),
          round(c["deepum"]["extra_wall_ns_per_launch"]))
PY
echo "hook cost done $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout $(( 585 - ($(date +%s) - T0) )) python3 -m pytest -v -p no:cacheprovider tests/test_runtime_gpu.py \
  tests/test_safety_gpu.py -k "sleep or host_map or timeline or embedding or side_stream or two_threads" > $R/tests.log 2>&1
grep -E "PASSED|FAILED|ERROR|passed|failed" $R/tests.log | cut -c1-160
echo "total $(( $(date +%s) - T0 )) s"
rm -f $R/build.log $R/prebuild.log
tar -czf $OUT/e.tgz -C $OUT records; rm -rf $R
