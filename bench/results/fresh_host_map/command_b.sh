#!/usr/bin/env bash
# call B: the final tree (the memory map's fresh blocks kept as a set): the host-mapping, embedding,
# sleep and timeline GPU tests; GPT-2 24L at 0.5, 8 steps of which 3 warm-up.
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; rm -rf $R; mkdir -p $R
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_runtime_gpu.py -k "host_mapping or embedding or sleeps or timeline" > $R/gpu_tests.log 2>&1; tail -2 $R/gpu_tests.log
PYTHONPATH=. timeout 150 python3 bench/train.py --workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 \
  --capacity 5961154560 --mode deepum --steps 8 --warmup 3 -o $R/GPT2_deepum.json > $R/GPT2_deepum.log 2>&1 || tail -3 $R/GPT2_deepum.log
python3 -c "
import json; d=json.load(open('$R/GPT2_deepum.json')); s=d['stats']
print('GPT2', [round(x,3) for x in d['step_s']], 'median', round(d['step_s_median'],3), d['parameter_sha256'][:12], 'errors', s['cuda_errors'])
print('   host_map GB per iteration', [round(r.get('host_map_bytes',0)/1e9,2) for r in s['per_iteration']])"
echo "total $(( $(date +%s) - T0 )) s"
tar -czf $OUT/b.tgz -C $OUT records; rm -rf $R
