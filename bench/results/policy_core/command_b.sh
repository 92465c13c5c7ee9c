#!/usr/bin/env bash
# GPU check B: the GPU tests (runtime and access patterns) and bench/gpu_check.py on the 24-layer GPT-2
# at half its footprint, with the engine over the policy core.
export DEEPUM_NO_OVERSUBSCRIBE=1
cd out/head  # the committed tree
R=$OUT/records; mkdir -p $R
nvidia-smi --query-gpu=name,memory.free,driver_version --format=csv > $R/gpu.txt
python3 -c "import torch; print(torch.__version__, torch.version.cuda)" >> $R/gpu.txt
pip list 2>/dev/null | grep -iE "cupy|numba|torch|cuda" >> $R/gpu.txt
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
TESTS="tests/test_runtime_gpu.py"; [ -f tests/test_access_patterns_gpu.py ] && TESTS="$TESTS tests/test_access_patterns_gpu.py"
START=$(date +%s)
PYTHONPATH=. timeout 300 python3 -m pytest -q -p no:cacheprovider -rs $TESTS > $R/gpu_tests.log 2>&1
echo "gpu tests rc=$? in $(( $(date +%s) - START )) s" >> $R/gpu_tests.log
tail -30 $R/gpu_tests.log
PYTHONPATH=. timeout 420 python3 bench/gpu_check.py --fraction 0.5 --out $R/gpu_check -- --layers 24 --hidden 1024 \
  --heads 16 --seq 512 --batch 4 --steps 20 --warmup 5 > $R/gpu_check.log 2>&1
tail -5 $R/gpu_check.log
python3 -c "
import json; s=json.load(open('$R/gpu_check/gpu_check.json'))
print({k: v for k, v in s.items() if k != 'runs'})
for name, r in s['runs'].items(): print(name, round(r['step_s_median'], 4), r['bitwise_equal_to_none'], round(r['faults_per_step_after_warmup'], 1), r['cuda_errors'])"
cd $OUT && tar czf records.tgz records && rm -rf records
