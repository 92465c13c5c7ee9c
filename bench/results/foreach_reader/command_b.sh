#!/usr/bin/env bash
# call B: every GPU test file on the tree with the foreach reader
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout 530 python3 -m pytest -v -p no:cacheprovider -rs --durations=10 tests/test_runtime_gpu.py tests/test_access_patterns_gpu.py tests/test_safety_gpu.py tests/test_launcher_gpu.py tests/test_warm_start_gpu_cpu.py > $R/gpu_tests.log 2>&1; echo "rc=$? in $(( $(date +%s) - T0 )) s" >> $R/gpu_tests.log
grep -E "FAILED|ERROR|Error:| passed| failed|rc=" $R/gpu_tests.log | tail -25
tar -czf $OUT/b.tgz -C $OUT records
