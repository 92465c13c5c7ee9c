#!/usr/bin/env bash
# call I: is the GPU's idle time the launching thread's or the migrations'? GPT-2 24L and BERT-Large 24L
# at 0.5: none once, deepum twice, each step's enqueue time (until the step's code returned) beside
# the step and the GPU's busy time; 8 steps of which 3 warm-up.
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
run() {  # name, capacity, train.py flags
  local name=$1 capacity=$2; shift 2
  PYTHONPATH=. timeout 120 python3 bench/train.py "$@" --steps 8 --warmup 3 --mode none -o $R/${name}_none.json > $R/${name}_none.log 2>&1
  for i in 1 2; do
    PYTHONPATH=. timeout 150 python3 bench/train.py "$@" --steps 8 --warmup 3 --mode deepum --capacity $capacity \
      --reference $R/${name}_none.json -o $R/${name}_deepum_$i.json > $R/${name}_deepum_$i.log 2>&1
  done
  for f in $R/${name}_*.json; do python3 -c "
import json; d=json.load(open('$f')); s=d.get('stats') or {}
print('$(basename $f)', 'step', [round(x,3) for x in d['step_s']], 'enqueue', [round(x,3) for x in d.get('enqueue_s') or []], d.get('parameter_sha256','')[:12],
      'median step', round(d['step_s_median'],3), 'enqueue', round(d.get('enqueue_s_median') or 0,3), 'busy', d.get('gpu_busy_s_per_step'), 'hook', d.get('hook_s_per_step'), 'errors', s.get('cuda_errors'))"; done
}
run gpt2 5961154560 --workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4
run bert-large 3792699392 --workload bert-large --layers 24 --seq 128 --batch 8
echo "runs done $(( $(date +%s) - T0 )) s"
tar -czf $OUT/i.tgz -C $OUT records; rm -rf $R
