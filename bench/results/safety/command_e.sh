#!/usr/bin/env bash
# GPU check E: every GPU test, verbose (working tree), then the 24-layer GPT-2 at half its footprint,
# deepum before (6fc6322, out/baseline) and after, side by side, as time allows.
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
nvidia-smi --query-gpu=name,memory.free,driver_version --format=csv > $R/gpu.txt
python3 -c "import torch, transformers; print(torch.__version__, torch.version.cuda, transformers.__version__)" >> $R/gpu.txt 2>&1
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. timeout 380 python3 -m pytest -v -p no:cacheprovider -rs tests/test_safety_gpu.py tests/test_runtime_gpu.py tests/test_access_patterns_gpu.py tests/test_launcher_gpu.py > $R/gpu_tests_verbose.log 2>&1
echo "tests rc=$? in $(( $(date +%s) - T0 )) s" >> $R/gpu_tests_verbose.log
grep -E "PASSED|FAILED|ERROR|SKIPPED|passed|failed|rc=" $R/gpu_tests_verbose.log | tail -45
ARGS="--mode deepum --capacity 5961154560 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --steps 12 --warmup 4"
if [ $(( $(date +%s) - T0 )) -lt 430 ]; then
  (cd out/baseline && python3 setup.py -q build_ext --inplace > $R/build_baseline.log 2>&1)
  (cd out/baseline && PYTHONPATH=. timeout 100 python3 bench/train.py $ARGS -o $R/before.json > $R/before.log 2>&1)
  PYTHONPATH=. timeout 100 python3 bench/train.py $ARGS -o $R/after.json > $R/after.log 2>&1
  for f in $R/before.json $R/after.json; do python3 -c "import json; r=json.load(open('$f')); print('$f', r['step_s_median'], r['parameter_sha256'][:16], r['stats'].get('cuda_errors'))" 2>&1 | tail -1; done
fi
echo "total $(( $(date +%s) - T0 )) s"
