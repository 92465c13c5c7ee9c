#!/usr/bin/env bash
# call L: after the last refactors (one reader of a learned state's positions, one helper for blocks'
# preferred locations in the GPU tests): the host-mapping and embedding-table GPU tests.
export DEEPUM_NO_OVERSUBSCRIBE=1
R=$OUT/records; mkdir -p $R
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. timeout 500 python3 -m pytest -q -p no:cacheprovider -rA tests/test_runtime_gpu.py -k "host_mapping or embedding_tables or sleeps" > $R/gpu_tests_l.log 2>&1
grep -E "^(PASSED|FAILED|ERROR)|passed|failed" $R/gpu_tests_l.log | tail -10
tar -czf $OUT/l.tgz -C $OUT records; rm -rf $R
