#!/usr/bin/env bash
# call E: the GPU tests call B did not reach in its time (and the foreach host-mapping test again, with its output)
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
PYTHONPATH=. timeout 100 python3 -m pytest -v -p no:cacheprovider -rs -k "host_mapping" tests/test_runtime_gpu.py > $R/host_map_test.log 2>&1; echo "rc=$?" >> $R/host_map_test.log
grep -E "PASSED|FAILED|^E |rc=" $R/host_map_test.log | head -20
grep -E "^host_map\(foreach\)" $R/host_map_test.log | cut -c1-600
PYTHONPATH=. timeout $(( 560 - ($(date +%s) - T0) )) python3 -m pytest -v -p no:cacheprovider -rs --durations=5 tests/test_launcher_gpu.py tests/test_warm_start_gpu_cpu.py tests/test_safety_gpu.py -k "reenable or pool_dropped or made_after_disable or launcher or warm" > $R/rest.log 2>&1; echo "rc=$? in $(( $(date +%s) - T0 )) s" >> $R/rest.log
grep -E "PASSED|FAILED|ERROR| passed| failed|rc=" $R/rest.log | tail -15
tar -czf $OUT/e.tgz -C $OUT records
