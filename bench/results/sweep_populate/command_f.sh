#!/usr/bin/env bash
# call F: no pressure, in alternation, on the final tree: bench/no_pressure.py --repeats 2 (none and
# unbudgeted deepum twice each, 12 steps of which 2 warm-up) at run_all.py's SWEEP_SIZES.
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; rm -rf $R; mkdir -p $R
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout $(( 585 - ($(date +%s) - T0) )) python3 bench/no_pressure.py --out $R/no_pressure \
  --workloads dlrm,moe,resnet152,gpt2,bert-large --steps 12 --warmup 2 --repeats 2 --timeout 120 > $R/no_pressure.log 2>&1
tail -8 $R/no_pressure.log; echo "total $(( $(date +%s) - T0 )) s"
rm -rf $R/no_pressure/logs; tar -czf $OUT/f.tgz -C $OUT records; rm -rf $R
