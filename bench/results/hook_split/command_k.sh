#!/usr/bin/env bash
# call K: GPU tests on the tree with the hook's time split (the engine's and the hook's code paths, side streams, injected failures)
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
PYTHONPATH=. timeout $(( 400 - ($(date +%s) - T0) )) python3 -m pytest -v -p no:cacheprovider -rs tests/test_runtime_gpu.py tests/test_access_patterns_gpu.py tests/test_safety_gpu.py -k "not compiled and not twenty and not hf_trainer and not graph" > $R/gpu_tests.log 2>&1; echo "rc=$? in $(( $(date +%s) - T0 )) s" >> $R/gpu_tests.log
grep -E "PASSED|FAILED|ERROR| passed| failed|rc=" $R/gpu_tests.log | tail -40
