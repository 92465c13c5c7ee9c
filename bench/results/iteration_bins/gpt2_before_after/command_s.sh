#!/usr/bin/env bash
# call 5: GPT-2 24L at half its footprint, deepum before (1f83583, flush at marks) and after (binned marks), alternating
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
build() { (cd $1 && python3 setup.py -q build_ext --inplace > $R/build_$2.log 2>&1 && PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" >> $R/build_$2.log 2>&1) || tail -20 $R/build_$2.log; }
build out/base1f8 before & build . after; wait
echo "built in $(( $(date +%s) - T0 )) s"
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
ARGS="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --steps 8 --warmup 3 --capacity 5961154560"
for i in 1 2; do
  (cd out/base1f8 && PYTHONPATH=. timeout 90 python3 bench/train.py --mode deepum $ARGS -o $R/before_$i.json > $R/before_$i.log 2>&1)
  PYTHONPATH=. timeout 90 python3 bench/train.py --mode deepum $ARGS -o $R/after_$i.json > $R/after_$i.log 2>&1
done
python3 - <<'PY'
import json,os
R=os.environ["OUT"]+"/records"
for n in ["before_1","after_1","before_2","after_2"]:
    try:
        d=json.load(open(f"{R}/{n}.json")); print(n, round(d["step_s_median"],3), [round(x,2) for x in d["step_s"]], d["parameter_sha256"][:12], d["faults_per_step"])
    except Exception as e: print(n, "failed", e)
PY
tar -czf $OUT/s.tgz -C $OUT records
echo "total $(( $(date +%s) - T0 )) s"
