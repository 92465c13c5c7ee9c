#!/usr/bin/env bash
# call C: the GPU tests of the runtime (the step timeline among them) and the safety tests of graphs,
# compile and the profiler, on the final tree.
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; rm -rf $R; mkdir -p $R
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout $(( 570 - ($(date +%s) - T0) )) python3 -m pytest -v -p no:cacheprovider tests/test_runtime_gpu.py \
  tests/test_safety_gpu.py -k "not twenty and not side_stream and not two_threads" > $R/tests.log 2>&1
grep -E "PASSED|FAILED|ERROR|passed|failed" $R/tests.log | cut -c1-160
echo "tests done $(( $(date +%s) - T0 )) s"
tar -czf $OUT/c.tgz -C $OUT records; rm -rf $R
