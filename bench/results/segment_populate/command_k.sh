#!/usr/bin/env bash
# call K: where the launching thread's step goes. GPT-2 24L at 0.5, deepum twice: the step, its enqueue
# time, the hook's CPU time and the driver's time in the launch calls after the hook (launch_driver_ns);
# 8 steps of which 3 warm-up, against one none run.
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
GPT2=(--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --steps 8 --warmup 3)
PYTHONPATH=. timeout 120 python3 bench/train.py "${GPT2[@]}" --mode none -o $R/gpt2_none.json > $R/gpt2_none.log 2>&1
for i in 1 2; do
  PYTHONPATH=. timeout 150 python3 bench/train.py "${GPT2[@]}" --mode deepum --capacity 5961154560 \
    --reference $R/gpt2_none.json -o $R/gpt2_deepum_$i.json > $R/gpt2_deepum_$i.log 2>&1
  python3 -c "
import json; d=json.load(open('$R/gpt2_deepum_$i.json')); s=d.get('stats') or {}
print('deepum $i', [round(x,3) for x in d['step_s']], 'median', round(d['step_s_median'],3), 'enqueue', round(d['enqueue_s_median'],3),
      'hook', round(d['hook_s_per_step'],3), 'launch driver', round(d.get('launch_driver_s_per_step') or 0,3), 'busy', round(d.get('gpu_busy_s_per_step') or 0,3),
      d.get('parameter_sha256','')[:12], 'errors', s.get('cuda_errors'))
print('   launch driver per iteration', [round(r.get('launch_driver_ns',0)/1e9,3) for r in s['per_iteration']])"
done
echo "runs done $(( $(date +%s) - T0 )) s"
tar -czf $OUT/k.tgz -C $OUT records; rm -rf $R
