#!/usr/bin/env bash
# call G: the GPU runtime tests (sleep, the timeline, host mapping, embedding tables, um bitwise, learning
# from the fault log) and the access-pattern tests on the tree with recycled events.
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; rm -rf $R; mkdir -p $R
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout $(( 585 - ($(date +%s) - T0) )) python3 -m pytest -v -p no:cacheprovider tests/test_runtime_gpu.py tests/test_access_patterns_gpu.py \
  -k "sleeps or timeline or host_mapping or embedding or bitwise or fault_log or pages_written or gather or arithmetic" > $R/tests.log 2>&1
grep -E "PASSED|FAILED|ERROR|passed|failed" $R/tests.log | cut -c1-160
rm -f $R/build.log $R/prebuild.log
tar -czf $OUT/g.tgz -C $OUT records; rm -rf $R
echo "total $(( $(date +%s) - T0 )) s"
