#!/usr/bin/env bash
# call B: host mapping (Adam's state mapped from the host) against deepum without it, side by side
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
PYTHONPATH=. timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_runtime_gpu.py -k "host_mapping or sleeps" > $R/gpu_tests.log 2>&1
tail -3 $R/gpu_tests.log; echo "tests done $(( $(date +%s) - T0 )) s"
run() {  # name, timeout, train.py arguments
  local name=$1 t=$2; shift 2
  PYTHONPATH=. timeout $t python3 bench/train.py "$@" -o $R/$name.json > $R/$name.log 2>&1 || { echo "$name failed"; tail -5 $R/$name.log; }
}
G="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --steps 8 --warmup 3"
run gpt2_none 60 $G --mode none
for i in 1 2; do
  run gpt2_off_$i 90 $G --mode deepum --capacity 5961154560 --reference $R/gpt2_none.json
  run gpt2_hm4_$i 90 $G --mode deepum --capacity 5961154560 --config bench/results/host_map/gpu_b/hm4.json --reference $R/gpt2_none.json
  run gpt2_hm3_$i 90 $G --mode deepum --capacity 5961154560 --config bench/results/host_map/gpu_b/hm3.json --reference $R/gpt2_none.json
done
echo "gpt2 done $(( $(date +%s) - T0 )) s"
run gpt2bf_none 60 $G --precision bf16 --mode none
run gpt2bf_off 90 $G --precision bf16 --mode deepum --capacity 6088032256 --reference $R/gpt2bf_none.json
run gpt2bf_hm4 90 $G --precision bf16 --mode deepum --capacity 6088032256 --config bench/results/host_map/gpu_b/hm4.json --reference $R/gpt2bf_none.json
B="--workload bert-large --layers 24 --seq 128 --batch 8 --steps 8 --warmup 3"
run bert_none 60 $B --mode none
run bert_off 90 $B --mode deepum --capacity 3792699392 --reference $R/bert_none.json
run bert_hm4 90 $B --mode deepum --capacity 3792699392 --config bench/results/host_map/gpu_b/hm4.json --reference $R/bert_none.json
echo "all done $(( $(date +%s) - T0 )) s"
python3 - <<'PY'
import json,os,glob
R=os.environ["OUT"]+"/records"
for f in sorted(glob.glob(f"{R}/*.json")):
    n=os.path.basename(f)[:-5]
    try:
        d=json.load(open(f)); s=d.get("stats") or {}
        b=d.get("bytes_per_step") or {}
        print(n, round(d["step_s_median"],3), [round(x,2) for x in d["step_s"]], d["parameter_sha256"][:10],
              "faults", d.get("faults_per_step"), "hm", s.get("host_map_bytes"), "unmap", s.get("host_unmap_bytes"),
              "errs", s.get("cuda_errors"), "in %.2f out %.2f GB" % ((b.get("prefetch_bytes") or 0)/1e9, (b.get("evict_bytes") or 0)/1e9),
              "link", d.get("link_busy_s_per_step"))
    except Exception as e: print(n, "failed", repr(e))
PY
tar -czf $OUT/b.tgz -C $OUT records
echo "total $(( $(date +%s) - T0 )) s"
