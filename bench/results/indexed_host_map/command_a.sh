#!/usr/bin/env bash
# call A: host mapping of blocks only indexed kernels use. The GPU test of embedding tables, then DLRM
# at 0.5 and 0.75 of its footprint: none, um, deepum, and deepum with host_map_indexed off at the same
# capacity.
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
left() { echo $(( 585 - ($(date +%s) - T0) )); }
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout 240 python3 -m pytest -q -p no:cacheprovider tests/test_runtime_gpu.py -k "embedding_tables or host_mapping" > $R/gpu_tests.log 2>&1; tail -3 $R/gpu_tests.log
echo '{"host_map_indexed": false}' > $R/indexed_off.json
SIZE="--tables 8 --rows 500000 --dim 64 --lookups 32 --batch 2048"
for B in 0.50 0.75; do
  PYTHONPATH=. timeout $(left) python3 bench/run_all.py --out $R/dlrm --workloads dlrm --budgets $B --modes none,um,deepum --steps 8 --warmup 3 --timeout 100 > $R/dlrm_$B.log 2>&1
  CAP=$(python3 -c "import json;print(json.load(open('$R/dlrm/dlrm_deepum_b$B.json'))['capacity_bytes'])") || continue
  PYTHONPATH=. timeout $(left) python3 bench/train.py --workload dlrm --mode deepum --config $R/indexed_off.json -o $R/dlrm/dlrm_deepum-indexed-off_b$B.json --steps 8 --warmup 3 $SIZE --reference $R/dlrm/dlrm_none_full.json --capacity $CAP > $R/dlrm_off_$B.log 2>&1
  echo "budget $B done $(( $(date +%s) - T0 )) s"
done
for f in $R/dlrm/*.json; do python3 -c "
import json; d=json.load(open('$f')); s=d.get('stats') or {}
print('$(basename $f)', d.get('status'), 'step', round(d.get('step_s_median') or 0,4), 'steps', [round(x,3) for x in d.get('step_s') or []], 'sha', (d.get('parameter_sha256') or '')[:12], 'idx', s.get('indexed_launches'), 'hm', s.get('host_map_bytes'), 'ev', s.get('evict_bytes'), 'pf', s.get('prefetch_bytes'), 'faults', d.get('faults_per_step'))" 2>/dev/null; done
echo "total $(( $(date +%s) - T0 )) s"
rm -rf $R/dlrm/logs
tar -czf $OUT/a.tgz -C $OUT records
rm -rf $R
