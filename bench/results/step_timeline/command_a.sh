#!/usr/bin/env bash
# call A: where the GPU's idle time goes under pressure. The timeline GPU test beside the sleep test;
# then GPT-2 24L, BERT-Large 24L and the MoE at 0.5 of their footprint, deepum with step 4's timeline
# captured (6 steps, 3 of warm-up), GPT-2 and BERT-Large against one none run each.
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_runtime_gpu.py -k "timeline or sleeps" > $R/gpu_tests.log 2>&1; tail -3 $R/gpu_tests.log
echo "tests done $(( $(date +%s) - T0 )) s"
GPT2=(--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4)
BERT=(--workload bert-large --layers 24 --seq 128 --batch 8)
MOE=(--workload moe --layers 12 --hidden 768 --heads 12 --seq 512 --batch 2)
run() {  # name capacity args...
  local name=$1 cap=$2; shift 2
  if [ "$cap" = none ]; then
    PYTHONPATH=. timeout 120 python3 bench/train.py "$@" --steps 6 --warmup 3 --mode none -o $R/${name}_none.json > $R/${name}_none.log 2>&1
  else
    local ref=(); [ -f $R/${name}_none.json ] && ref=(--reference $R/${name}_none.json)
    PYTHONPATH=. timeout 200 python3 bench/train.py "$@" --steps 6 --warmup 3 --mode deepum --capacity $cap "${ref[@]}" \
      --timeline-step 4 -o $R/${name}_deepum.json > $R/${name}_deepum.log 2>&1 || tail -5 $R/${name}_deepum.log
  fi
}
run gpt2 none "${GPT2[@]}"; run gpt2 5961154560 "${GPT2[@]}"
run bert none "${BERT[@]}"; run bert 3792699392 "${BERT[@]}"
run moe 5988417536 "${MOE[@]}"
echo "runs done $(( $(date +%s) - T0 )) s"
for f in $R/*_deepum.json; do python3 -c "
import json; d=json.load(open('$f')); t=d.get('timeline') or {}; s=d.get('stats') or {}
print('$f'.split('/')[-1], 'steps', [round(x,3) for x in d['step_s']], d.get('parameter_sha256','')[:12], 'errors', s.get('cuda_errors'))
print('  ', {k: (round(v/1e6,1) if k.endswith('_ns') else v) for k, v in t.items() if k not in ('spans','plot')})"; done
for f in $R/*_none.json; do python3 -c "
import json; d=json.load(open('$f')); print('$f'.split('/')[-1], round(d['step_s_median'],4), d.get('parameter_sha256','')[:12])"; done
tar -czf $OUT/a.tgz -C $OUT records; rm -rf $R
