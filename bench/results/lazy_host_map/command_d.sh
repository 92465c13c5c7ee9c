#!/usr/bin/env bash
# call D: the embedding-table host-mapping GPU test again, its mapped bytes now counted from the blocks
# that prefer the host.
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout 300 python3 -m pytest -q -p no:cacheprovider -s tests/test_runtime_gpu.py -k "embedding or sleeps" > $R/embedding_test.log 2>&1
echo "tests: $(tail -1 $R/embedding_test.log) at $(( $(date +%s) - T0 )) s"
grep -o '"table_preferred": \[[^]]*\]' $R/embedding_test.log | head -2 | cut -c1-400
tar -czf $OUT/d.tgz -C $OUT records; rm -rf $R
