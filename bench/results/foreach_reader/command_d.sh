#!/usr/bin/env bash
# call D: discards issued without the memory map's lock. GPT-2 24L, BERT-Large 24L and the MoE at half
# their footprint: this tree (none, um, deepum) and, at the same capacity, deepum from the tree before
# (4cd7400, the foreach reader; out/base.tgz made by `git archive HEAD`).
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
left() { echo $(( 585 - ($(date +%s) - T0) )); }
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
build() {  # $1: a tree
  (cd $1 && python3 setup.py -q build_ext --inplace && PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())")
}
rm -rf /tmp/base; mkdir -p /tmp/base && tar -xzf out/base.tgz -C /tmp/base
build . > $R/build.log 2>&1 || tail -30 $R/build.log
build /tmp/base > $R/build_base.log 2>&1 || tail -30 $R/build_base.log
echo "built in $(( $(date +%s) - T0 )) s"
pair() {  # $1 workload, $2 size flags
  PYTHONPATH=. timeout $(left) python3 bench/run_all.py --out $R/$1 --workloads $1 --budgets 0.5 --modes none,um,deepum --steps 8 --warmup 3 --timeout 120 ${2:+--size "$1=$2"} > $R/$1.log 2>&1
  CAP=$(python3 -c "import json;print(json.load(open('$R/$1/$1_deepum_b0.50.json'))['capacity_bytes'])") || return
  (cd /tmp/base && PYTHONPATH=. timeout $(left) python3 bench/train.py --workload $1 --mode deepum -o $R/$1/base_$1_deepum_b0.50.json --steps 8 --warmup 3 $2 --reference $R/$1/$1_none_full.json --capacity $CAP > $R/$1_base.log 2>&1)
  for f in $R/$1/*.json; do python3 -c "
import json,sys; d=json.load(open('$f')); s=d.get('stats') or {}
print('$(basename $f)', d.get('status'), 'step', round(d.get('step_s_median') or 0,3), 'hook', round(d.get('hook_s_per_step') or 0,3), 'sha', (d.get('parameter_sha256') or '')[:12], 'holds', s.get('allocation_holds_for_discard'), 'waits', s.get('allocation_waits_for_discard'), 'err', s.get('cuda_errors'))" 2>/dev/null; done
  echo "$1 done $(( $(date +%s) - T0 )) s"
}
pair gpt2 "--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
pair bert-large "--layers 24 --seq 128 --batch 8"
pair moe "--layers 12 --hidden 768 --heads 12 --seq 512 --batch 2"
echo "total $(( $(date +%s) - T0 )) s"
tar -czf $OUT/d.tgz -C $OUT records
rm -rf $R
