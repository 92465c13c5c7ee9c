#!/usr/bin/env bash
# call F: GPU tests on this tree, tests/test_safety_gpu.py, tests/test_launcher_gpu.py and the GPU cases of
# tests/test_warm_start_gpu_cpu.py.
export DEEPUM_NO_OVERSUBSCRIBE=1
R=$OUT/records; mkdir -p $R
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. timeout 570 python3 -m pytest -q -p no:cacheprovider -rA tests/test_safety_gpu.py tests/test_launcher_gpu.py > $R/gpu_tests_f.log 2>&1
grep -E "^(PASSED|FAILED|ERROR)|passed|failed" $R/gpu_tests_f.log | tail -60
tar -czf $OUT/f.tgz -C $OUT records; rm -rf $R
