#!/usr/bin/env bash
# call A: the owed validation of the engine at c5b6c75 (fault-log totals in the iteration bins): GPU tests,
# GPT-2 24L at half its footprint (none, um, deepum), stats keys and per-iteration faults
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
git rev-parse --short HEAD > $R/rev.txt 2>/dev/null; nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
PYTHONPATH=. timeout 240 python3 -m pytest -q -p no:cacheprovider tests/test_runtime_gpu.py tests/test_access_patterns_gpu.py > $R/gpu_tests.log 2>&1
tail -3 $R/gpu_tests.log; echo "tests done $(( $(date +%s) - T0 )) s"
ARGS="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --steps 8 --warmup 3"
PYTHONPATH=. timeout 60 python3 bench/train.py --mode none $ARGS -o $R/none.json > $R/none.log 2>&1
for m in um deepum; do
  PYTHONPATH=. timeout 120 python3 bench/train.py --mode $m $ARGS --capacity 5961154560 -o $R/$m.json > $R/$m.log 2>&1
done
python3 - <<'PY'
import json,os
R=os.environ["OUT"]+"/records"
for n in ["none","um","deepum"]:
    try:
        d=json.load(open(f"{R}/{n}.json")); s=d.get("stats") or {}
        print(n, round(d["step_s_median"],3), [round(x,2) for x in d["step_s"]], d["parameter_sha256"][:12], d.get("faults_per_step"))
        print("  stats keys:", sorted(s)[:80])
        pi = s.get("per_iteration") or {}
        print("  per_iteration keys:", sorted(pi) if isinstance(pi, dict) else type(pi))
        for k in ("faults_by_step","link_busy_s_per_step","hook_s_per_step","bytes_per_step"):
            print("  ", k, d.get(k))
    except Exception as e: print(n, "failed", repr(e))
PY
tar -czf $OUT/a.tgz -C $OUT records
echo "total $(( $(date +%s) - T0 )) s"
