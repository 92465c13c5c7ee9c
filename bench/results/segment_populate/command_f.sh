#!/usr/bin/env bash
# call F: the GPU's busy time per step from kernel records (gpu_busy_ns, on while the engine is awake).
# GPT-2 24L at 0.5: none, um and deepum, 8 steps of which 3 warm-up; then the GPU tests that touch the
# fault log and kernel records (the sleep test, the profiler test, injected CUDA failures).
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
GPT2=(--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --steps 8 --warmup 3)
PYTHONPATH=. timeout 120 python3 bench/train.py "${GPT2[@]}" --mode none -o $R/gpt2_none.json > $R/gpt2_none.log 2>&1
for mode in um deepum; do
  PYTHONPATH=. timeout 150 python3 bench/train.py "${GPT2[@]}" --mode $mode --capacity 5961154560 \
    --reference $R/gpt2_none.json -o $R/gpt2_${mode}_b0.50.json > $R/gpt2_$mode.log 2>&1
done
for f in $R/gpt2_*.json; do python3 -c "
import json; d=json.load(open('$f')); s=d.get('stats') or {}
print('$(basename $f)', [round(x,3) for x in d['step_s']], d.get('parameter_sha256','')[:12], 'busy', d.get('gpu_busy_s_per_step'), 'idle', d.get('gpu_idle_s_per_step'), 'link', d.get('link_busy_s_per_step'), 'errors', s.get('cuda_errors'))
print('   per iteration gpu_busy_ns', [r.get('gpu_busy_ns') for r in s.get('per_iteration') or []])"; done
echo "runs done $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout $(( 580 - ($(date +%s) - T0) )) python3 -m pytest -q -p no:cacheprovider tests/test_runtime_gpu.py tests/test_safety_gpu.py \
  -k "sleeps or profiler or injected" > $R/tests.log 2>&1
tail -3 $R/tests.log
echo "tests done $(( $(date +%s) - T0 )) s"
tar -czf $OUT/f.tgz -C $OUT records; rm -rf $R
