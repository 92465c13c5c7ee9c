#!/usr/bin/env bash
# call H: kernel waits skipped when the host already sees the migrations completed (progress words in
# pinned host memory): deepum at 0.5 from this tree and from the tree before (out/base.tgz, made by
# `git archive` of the commit before), side by side at the capacities of the sweep in
# bench/results/indexed_host_map/sweep, GPT-2 24L, BERT-Large 24L and the MoE.
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R/pairs
left() { echo $(( 585 - ($(date +%s) - T0) )); }
build() {  # $1: a tree
  (cd $1 && python3 setup.py -q build_ext --inplace && PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())")
}
[ -d /tmp/base/deepum ] || { mkdir -p /tmp/base && tar -xzf out/base.tgz -C /tmp/base; }
build . > $R/build.log 2>&1 || tail -30 $R/build.log
build /tmp/base > $R/build_base.log 2>&1 || tail -30 $R/build_base.log
echo "built in $(( $(date +%s) - T0 )) s"
S=$PWD/bench/results/indexed_host_map/sweep
pair() {  # $1 workload, $2 size flags
  CAP=$(python3 -c "import json;print(json.load(open('$S/$1_deepum_b0.50.json'))['capacity_bytes'])")
  for V in before after; do
    DIR=.; [ $V = before ] && DIR=/tmp/base
    (cd $DIR && PYTHONPATH=. timeout $(left) python3 bench/train.py --workload $1 --mode deepum -o $R/pairs/$1_deepum-${V}_b0.50.json --steps 8 --warmup 3 $2 --reference $S/$1_none_full.json --capacity $CAP > $R/pairs/$1_$V.log 2>&1)
    python3 -c "
import json; d=json.load(open('$R/pairs/$1_deepum-${V}_b0.50.json')); s=d.get('stats') or {}
print('$1 $V', d.get('status'), 'step', round(d['step_s_median'],4), [round(x,3) for x in d['step_s']], 'sha', d.get('parameter_sha256','')[:12], 'waits', s.get('kernel_waits'), 'skipped', s.get('kernel_waits_skipped'), 'hook', round(d.get('hook_s_per_step') or 0,3), 'split', d.get('hook_split_s_per_step'), 'errors', s.get('cuda_errors'))" || tail -5 $R/pairs/$1_$V.log
  done
}
pair gpt2 "--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
pair bert-large "--layers 24 --seq 128 --batch 8"
pair moe "--layers 12 --hidden 768 --heads 12 --seq 512 --batch 2"
echo "total $(( $(date +%s) - T0 )) s"
tar -czf $OUT/h.tgz -C $OUT records; rm -rf $R
