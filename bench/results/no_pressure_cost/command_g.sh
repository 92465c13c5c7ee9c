#!/usr/bin/env bash
# call G: no pressure on the final tree, every sweep workload, none and deepum in alternation (two runs
# each, 20 measured steps after 4 of warm-up).
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; rm -rf $R; mkdir -p $R
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout $(( 590 - ($(date +%s) - T0) )) python3 bench/no_pressure.py --out $R/no_pressure \
  --workloads dlrm,resnet152,bert-large,gpt2,moe --steps 24 --warmup 4 --repeats 2 --timeout 100 > $R/no_pressure.log 2>&1
grep -E "deepum / none" $R/no_pressure.log; echo "total $(( $(date +%s) - T0 )) s"
rm -rf $R/no_pressure/logs $R/build.log $R/prebuild.log; tar -czf $OUT/g.tgz -C $OUT records; rm -rf $R
