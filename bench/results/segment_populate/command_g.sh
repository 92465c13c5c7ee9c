#!/usr/bin/env bash
# call G: what the kernel records cost while the engine is awake. GPT-2 24L at 0.5, deepum, built from
# 840a92d (before them; carried as out/old.tar) and from this tree, three runs each in alternation,
# 8 steps of which 3 warm-up, against one none run (the tree's own kernels/ and driver_hooks/ included).
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
OLD=/tmp/old; mkdir -p $OLD && tar -xf out/old.tar -C $OLD
build() { (cd $1 && python3 setup.py -q build_ext --inplace > $R/build_$2.log 2>&1 || tail -30 $R/build_$2.log
  DEEPUM_CACHE=/tmp/cache_$2 PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild_$2.log 2>&1 || tail -20 $R/prebuild_$2.log); }
build . new; build $OLD old
echo "built in $(( $(date +%s) - T0 )) s"
GPT2=(--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --steps 8 --warmup 3)
PYTHONPATH=. timeout 120 python3 bench/train.py "${GPT2[@]}" --mode none -o $R/gpt2_none.json > $R/gpt2_none.log 2>&1
for i in 1 2 3; do
  for tree in old new; do
    dir=$([ $tree = new ] && pwd || echo $OLD)
    (cd $dir && DEEPUM_CACHE=/tmp/cache_$tree PYTHONPATH=. timeout 150 python3 bench/train.py "${GPT2[@]}" --mode deepum \
      --capacity 5961154560 --reference $R/gpt2_none.json -o $R/gpt2_deepum_${tree}_$i.json > $R/gpt2_deepum_${tree}_$i.log 2>&1)
    python3 -c "
import json; d=json.load(open('$R/gpt2_deepum_${tree}_$i.json')); s=d.get('stats') or {}
print('$tree $i', [round(x,3) for x in d['step_s']], 'median', round(d['step_s_median'],3), d.get('parameter_sha256','')[:12], 'busy', d.get('gpu_busy_s_per_step'), 'errors', s.get('cuda_errors'))"
  done
done
echo "runs done $(( $(date +%s) - T0 )) s"
tar -czf $OUT/g.tgz -C $OUT records; rm -rf $R
