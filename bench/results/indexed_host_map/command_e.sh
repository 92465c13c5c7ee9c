#!/usr/bin/env bash
# call E: GPU tests on this tree, tests/test_runtime_gpu.py and tests/test_access_patterns_gpu.py.
export DEEPUM_NO_OVERSUBSCRIBE=1
R=$OUT/records; mkdir -p $R
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. timeout 570 python3 -m pytest -q -p no:cacheprovider -rA tests/test_runtime_gpu.py tests/test_access_patterns_gpu.py > $R/gpu_tests_e.log 2>&1
grep -E "^(PASSED|FAILED|ERROR)|passed|failed" $R/gpu_tests_e.log | tail -60
tar -czf $OUT/e.tgz -C $OUT records; rm -rf $R
