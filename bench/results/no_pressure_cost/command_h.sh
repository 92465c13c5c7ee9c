#!/usr/bin/env bash
# call H: the safety GPU tests (exits, re-enabling with resident tensors, pools, graphs, compile,
# injected failures; the side-stream and two-thread ones ran in call E) and the launcher's, on the
# final tree: the memory map leaves its address order at every stop and rebuilds it at every wake.
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; rm -rf $R; mkdir -p $R
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout $(( 590 - ($(date +%s) - T0) )) python3 -m pytest -v -p no:cacheprovider tests/test_safety_gpu.py \
  tests/test_launcher_gpu.py -k "not side_stream and not two_threads" > $R/tests.log 2>&1
grep -E "PASSED|FAILED|ERROR|passed|failed" $R/tests.log | cut -c1-160
echo "total $(( $(date +%s) - T0 )) s"
rm -f $R/build.log $R/prebuild.log; tar -czf $OUT/h.tgz -C $OUT records; rm -rf $R
