#!/usr/bin/env bash
# call B: the side-stream, two-thread, twenty-exit and timeline GPU tests (call A's ran out of time
# after the probe).
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; rm -rf $R; mkdir -p $R
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout $(( 580 - ($(date +%s) - T0) )) python3 -m pytest -v -p no:cacheprovider tests/test_runtime_gpu.py \
  tests/test_safety_gpu.py -k "twenty or side_stream or two_threads or timeline" > $R/tests.log 2>&1
grep -E "PASSED|FAILED|ERROR|passed|failed" $R/tests.log | cut -c1-160
echo "tests done $(( $(date +%s) - T0 )) s"
tar -czf $OUT/b.tgz -C $OUT records; rm -rf $R
