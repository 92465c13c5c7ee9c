#!/usr/bin/env bash
# call K: where an unbudgeted, sleeping deepum loses time on DLRM (the sweep's size): none, um, deepum
# and deepum with its managed segments prefetched to the GPU, twice in alternation.
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
PYTHONPATH=. timeout $(( 585 - ($(date +%s) - T0) )) python3 bench/page_probe.py --workload dlrm --tables 8 --rows 500000 --dim 64 --lookups 32 --batch 2048 --steps 12 --warmup 2 --repeats 2 -o $R/page_probe.json 2>&1 | tail -14
echo "total $(( $(date +%s) - T0 )) s"
tar -czf $OUT/k.tgz -C $OUT records; rm -rf $R
