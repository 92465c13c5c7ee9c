#!/usr/bin/env bash
# call A: host mapping counting the uses of a block's current data (3a7c503). GPT-2 24L's first three
# steps at 0.5, um and cold deepum in alternation twice; GPT-2 24L and BERT-Large 24L at 0.5, 8 steps of
# which 3 warm-up (steady state against the sweep's); the host-mapping, sleep and timeline GPU tests.
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; rm -rf $R; mkdir -p $R
left() { echo $(( 580 - ($(date +%s) - T0) )); }
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout $(left) python3 bench/early_steps.py --out $R/early_gpt2_0.5 --footprint-from bench/results/sweep_sizes \
  --workloads gpt2 --budget 0.5 --steps 3 --repeats 2 --timeout 100 \
  --size "gpt2=--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4" > $R/early_gpt2_0.5.log 2>&1
tail -3 $R/early_gpt2_0.5.log; echo "early done $(( $(date +%s) - T0 )) s"
GPT2=(--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --capacity 5961154560)
BERT=(--workload bert-large --layers 24 --seq 128 --batch 8 --capacity 3792699392)
for w in GPT2 BERT; do
  eval "args=(\"\${$w[@]}\")"
  PYTHONPATH=. timeout 150 python3 bench/train.py "${args[@]}" --mode deepum --steps 8 --warmup 3 -o $R/${w}_deepum.json > $R/${w}_deepum.log 2>&1 || tail -3 $R/${w}_deepum.log
  python3 -c "
import json; d=json.load(open('$R/${w}_deepum.json')); s=d['stats']
print('$w', [round(x,3) for x in d['step_s']], 'median', round(d['step_s_median'],3), d['parameter_sha256'][:12], 'errors', s['cuda_errors'])
print('   host_map GB per iteration', [round(r.get('host_map_bytes',0)/1e9,2) for r in s['per_iteration']], 'H2D', [round(r.get('prefetch_bytes',0)/1e9+r.get('demand_prefetch_bytes',0)/1e9,2) for r in s['per_iteration']])"
done
echo "steady done $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout $(left) python3 -m pytest -q -p no:cacheprovider tests/test_runtime_gpu.py -k "host_mapping or embedding or sleeps or timeline" > $R/gpu_tests.log 2>&1; tail -3 $R/gpu_tests.log
echo "total $(( $(date +%s) - T0 )) s"
rm -rf $R/early_gpt2_0.5/logs; tar -czf $OUT/a.tgz -C $OUT records; rm -rf $R
