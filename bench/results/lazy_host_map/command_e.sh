#!/usr/bin/env bash
# call E: the safety, access-pattern and launcher GPU tests on the policy that maps waiting blocks as
# they are evicted.
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout $(( 580 - ($(date +%s) - T0) )) python3 -m pytest -q -p no:cacheprovider -rA tests/test_access_patterns_gpu.py \
  tests/test_safety_gpu.py tests/test_launcher_gpu.py > $R/gpu_tests_e.log 2>&1
echo "tests: $(tail -1 $R/gpu_tests_e.log) at $(( $(date +%s) - T0 )) s"
grep -E "^(FAILED|ERROR)" $R/gpu_tests_e.log | head
tar -czf $OUT/e.tgz -C $OUT records; rm -rf $R
