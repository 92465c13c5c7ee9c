#!/usr/bin/env bash
# call I: no pressure, side by side and in alternation (none, deepum, none, deepum), GPT-2 24L,
# BERT-Large 24L and ResNet-152 at the sweep's sizes, 12 steps of which 2 warm-up per run.
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
PYTHONPATH=. timeout $(( 585 - ($(date +%s) - T0) )) python3 bench/no_pressure.py --out $R/no_pressure --workloads gpt2,bert-large,resnet152 --steps 12 --warmup 2 --repeats 2 --timeout 120 > $R/no_pressure.log 2>&1
tail -5 $R/no_pressure.log; echo "total $(( $(date +%s) - T0 )) s"
rm -rf $R/no_pressure/logs; tar -czf $OUT/i.tgz -C $OUT records; rm -rf $R
