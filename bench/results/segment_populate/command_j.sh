#!/usr/bin/env bash
# call J: do the allocations made to wait for discards hold the GPU? GPT-2 24L at 0.5: deepum as is and
# with invalidate off (dead blocks evicted with a copy, never discarded), twice each in alternation,
# 8 steps of which 3 warm-up, against one none run.
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
GPT2=(--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --steps 8 --warmup 3)
PYTHONPATH=. timeout 120 python3 bench/train.py "${GPT2[@]}" --mode none -o $R/gpt2_none.json > $R/gpt2_none.log 2>&1
echo '{"invalidate": true}' > $R/invalidate.json; echo '{"invalidate": false}' > $R/kept.json
for i in 1 2; do
  for variant in invalidate kept; do
    PYTHONPATH=. timeout 150 python3 bench/train.py "${GPT2[@]}" --mode deepum --capacity 5961154560 --config $R/$variant.json \
      --reference $R/gpt2_none.json -o $R/gpt2_deepum_${variant}_$i.json > $R/gpt2_deepum_${variant}_$i.log 2>&1
    python3 -c "
import json; d=json.load(open('$R/gpt2_deepum_${variant}_$i.json')); s=d.get('stats') or {}; rows=s['per_iteration'][3:]
mean=lambda k: sum(r.get(k,0) for r in rows)/len(rows)
print('$variant $i', [round(x,3) for x in d['step_s']], 'median', round(d['step_s_median'],3), 'enqueue', round(d['enqueue_s_median'],3),
      'busy', round(d.get('gpu_busy_s_per_step') or 0,3), 'd2h GB', round(d['d2h_bytes_per_step']/1e9,2), 'h2d GB', round(d['h2d_bytes_per_step']/1e9,2),
      'alloc waits', mean('allocation_waits_for_discard'), 'kernel waits', mean('kernel_waits'), d.get('parameter_sha256','')[:12], 'errors', s.get('cuda_errors'))"
  done
done
echo "runs done $(( $(date +%s) - T0 )) s"
tar -czf $OUT/j.tgz -C $OUT records; rm -rf $R
