#!/usr/bin/env bash
# call C: the first two steps without a warm start, um and cold deepum in alternation, on the sweep's
# other workloads: BERT-Large 24L and ResNet-152 at 0.75 and 0.5, DLRM at 0.5 (two runs of each mode).
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
left() { echo $(( 580 - ($(date +%s) - T0) )); }
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
SIZES=(--size "bert-large=--layers 24 --seq 128 --batch 8" --size "resnet152=--batch 16 --image 224"
       --size "dlrm=--tables 8 --rows 500000 --dim 64 --lookups 32 --batch 2048")
for run in "bert-large,resnet152 0.75" "bert-large,resnet152,dlrm 0.5"; do
  set -- $run; name=early_$(echo $1 | tr ',' '_')_$2
  PYTHONPATH=. timeout $(left) python3 bench/early_steps.py --out $R/$name --footprint-from bench/results/sweep_sizes \
    --workloads $1 --budget $2 --steps 2 --repeats 2 --timeout 100 "${SIZES[@]}" > $R/$name.log 2>&1
  tail -5 $R/$name.log
  echo "$name done $(( $(date +%s) - T0 )) s"
done
tar -czf $OUT/c.tgz -C $OUT records; rm -rf $R
