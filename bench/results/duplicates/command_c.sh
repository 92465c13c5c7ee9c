#!/usr/bin/env bash
# call C: the read-duplication probe's cases without writes again, now checking whether the GPU's copy
# survives each drop (a prefetch back in after it); no pressure on DLRM (200 measured steps, five runs
# of each mode in alternation) and BERT-Large (40 measured steps, three runs each).
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; rm -rf $R; mkdir -p $R
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
python3 bench/duplicates.py --mib 2048 --repeats 2 --cases migrate,dup_prefetch,dup_unset -o $R/duplicates_no_writes.json > $R/duplicates.log 2>&1 || tail -20 $R/duplicates.log
echo "probe done $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout $(( 330 - ($(date +%s) - T0) )) python3 bench/no_pressure.py --out $R/no_pressure_dlrm \
  --workloads dlrm --steps 220 --warmup 20 --repeats 5 --timeout 120 > $R/no_pressure_dlrm.log 2>&1
tail -3 $R/no_pressure_dlrm.log; echo "dlrm done $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout $(( 585 - ($(date +%s) - T0) )) python3 bench/no_pressure.py --out $R/no_pressure_bert \
  --workloads bert-large --steps 45 --warmup 5 --repeats 3 --timeout 120 > $R/no_pressure_bert.log 2>&1
tail -3 $R/no_pressure_bert.log; echo "total $(( $(date +%s) - T0 )) s"
rm -rf $R/no_pressure_*/logs; tar -czf $OUT/c.tgz -C $OUT records; rm -rf $R
