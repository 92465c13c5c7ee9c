#!/usr/bin/env bash
# call D: the first two steps without a warm start, um and cold deepum in alternation: GPT-2 24L and
# the MoE at 0.5 (two runs of each mode), DLRM at 0.75 again (three runs of each mode).
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
left() { echo $(( 580 - ($(date +%s) - T0) )); }
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
SIZES=(--size "gpt2=--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
       --size "moe=--layers 12 --hidden 768 --heads 12 --seq 512 --batch 2"
       --size "dlrm=--tables 8 --rows 500000 --dim 64 --lookups 32 --batch 2048")
for run in "dlrm 0.75 3" "gpt2,moe 0.5 2"; do
  set -- $run; name=early_$(echo $1 | tr ',' '_')_$2
  PYTHONPATH=. timeout $(left) python3 bench/early_steps.py --out $R/$name --footprint-from bench/results/sweep_sizes \
    --workloads $1 --budget $2 --steps 2 --repeats $3 --timeout 100 "${SIZES[@]}" > $R/$name.log 2>&1
  tail -4 $R/$name.log
  echo "$name done $(( $(date +%s) - T0 )) s"
done
tar -czf $OUT/d.tgz -C $OUT records; rm -rf $R
