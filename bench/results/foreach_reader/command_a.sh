#!/usr/bin/env bash
# call A: the foreach reader on the GPU. The host-mapping GPU tests (fused and foreach Adam); then
# GPT-2 24L at half its footprint with this tree (none, um, deepum) and, at the same capacity, deepum
# from the tree before the reader (98c2cca, out/base.tgz made by `git archive HEAD`).
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
build() {  # $1: a tree
  (cd $1 && python3 setup.py -q build_ext --inplace && PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())")
}
mkdir -p /tmp/base && tar -xzf out/base.tgz -C /tmp/base
build . > $R/build.log 2>&1 || tail -30 $R/build.log
build /tmp/base > $R/build_base.log 2>&1 || tail -30 $R/build_base.log
echo "built in $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout 150 python3 -m pytest -v -p no:cacheprovider -rs tests/test_runtime_gpu.py -k "host_mapping" > $R/gpu_tests.log 2>&1; echo "rc=$? in $(( $(date +%s) - T0 )) s" >> $R/gpu_tests.log
grep -E "FAILED|ERROR|Error| passed| failed|rc=" $R/gpu_tests.log | tail -8
SIZE="--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
PYTHONPATH=. timeout 300 python3 bench/run_all.py --out $R/gpt2 --workloads gpt2 --budgets 0.5 --modes none,um,deepum --steps 8 --warmup 3 --timeout 120 --size "gpt2=$SIZE" > $R/gpt2.log 2>&1
CAP=$(python3 -c "import json;print(json.load(open('$R/gpt2/gpt2_deepum_b0.50.json'))['capacity_bytes'])")
(cd /tmp/base && PYTHONPATH=. timeout 120 python3 bench/train.py --workload gpt2 --mode deepum -o $R/gpt2/base_gpt2_deepum_b0.50.json --steps 8 --warmup 3 $SIZE --reference $R/gpt2/gpt2_none_full.json --capacity $CAP > $R/gpt2_base.log 2>&1)
for f in $R/gpt2/*.json; do python3 -c "
import json,sys; d=json.load(open('$f')); s=d.get('stats') or {}
print('$(basename $f)', d.get('status'), 'step', round(d.get('step_s_median') or 0,3), 'hook', round(d.get('hook_s_per_step') or 0,3), 'sha', (d.get('parameter_sha256') or '')[:12], 'tl', s.get('tensor_list_launches'), s.get('tensor_list_fallbacks'), 'hm', s.get('host_map_bytes'), 'ev', s.get('evict_bytes'))"; done
echo "total $(( $(date +%s) - T0 )) s"
tar -czf $OUT/a.tgz -C $OUT records
rm -rf $R
