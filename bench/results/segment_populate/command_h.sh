#!/usr/bin/env bash
# call H: the prediction window's length on the GPU. GPT-2 24L at 0.5, deepum with lookahead 32 (the
# default), 96 and 256, twice each in alternation, 8 steps of which 3 warm-up, against one none run.
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
GPT2=(--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --steps 8 --warmup 3)
PYTHONPATH=. timeout 120 python3 bench/train.py "${GPT2[@]}" --mode none -o $R/gpt2_none.json > $R/gpt2_none.log 2>&1
for i in 1 2; do
  for la in 32 96 256; do
    echo "{\"lookahead\": $la}" > $R/lookahead_$la.json
    PYTHONPATH=. timeout 150 python3 bench/train.py "${GPT2[@]}" --mode deepum --capacity 5961154560 --config $R/lookahead_$la.json \
      --reference $R/gpt2_none.json -o $R/gpt2_deepum_la${la}_$i.json > $R/gpt2_deepum_la${la}_$i.log 2>&1
    python3 -c "
import json; d=json.load(open('$R/gpt2_deepum_la${la}_$i.json')); s=d.get('stats') or {}
print('lookahead $la run $i', [round(x,3) for x in d['step_s']], 'median', round(d['step_s_median'],3), d.get('parameter_sha256','')[:12],
      'busy', round(d.get('gpu_busy_s_per_step') or 0,3), 'h2d', round((d.get('h2d_bytes_per_step') or 0)/1e9,2), 'errors', s.get('cuda_errors'))"
  done
done
echo "runs done $(( $(date +%s) - T0 )) s"
tar -czf $OUT/h.tgz -C $OUT records; rm -rf $R
