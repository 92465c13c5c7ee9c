#!/usr/bin/env bash
# Every GPU test, verbose, the two halves on the two GPUs at once; then on GPU 1 the 24-layer GPT-2 at
# half its footprint: none, deepum before (6fc6322, out/baseline) and deepum after, side by side.
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
python3 -c "import torch, transformers; print(torch.__version__, torch.version.cuda, transformers.__version__)" >> $R/gpu.txt 2>&1
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log &
(cd out/baseline && python3 setup.py -q build_ext --inplace > $R/build_baseline.log 2>&1) &
wait
echo "built in $(( $(date +%s) - T0 )) s"
PT="python3 -m pytest -v -p no:cacheprovider -rs --durations=12"
(CUDA_VISIBLE_DEVICES=0 PYTHONPATH=. timeout 520 $PT tests/test_safety_gpu.py > $R/gpu_tests_a.log 2>&1; echo "rc=$? in $(( $(date +%s) - T0 )) s" >> $R/gpu_tests_a.log) &
A=$!
(
CUDA_VISIBLE_DEVICES=1 PYTHONPATH=. timeout 400 $PT tests/test_runtime_gpu.py tests/test_access_patterns_gpu.py tests/test_launcher_gpu.py > $R/gpu_tests_b.log 2>&1; echo "rc=$? in $(( $(date +%s) - T0 )) s" >> $R/gpu_tests_b.log
ARGS="--capacity 5961154560 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --steps 12 --warmup 4"
export CUDA_VISIBLE_DEVICES=1
if [ $(( $(date +%s) - T0 )) -lt 420 ]; then
  (cd out/baseline && PYTHONPATH=. timeout 90 python3 bench/train.py --mode deepum $ARGS -o $R/before.json > $R/before.log 2>&1)
  PYTHONPATH=. timeout 90 python3 bench/train.py --mode deepum $ARGS -o $R/after.json > $R/after.log 2>&1
  PYTHONPATH=. timeout 60 python3 bench/train.py --mode none ${ARGS/--capacity 5961154560/} -o $R/none.json > $R/none.log 2>&1
fi
) &
wait
for f in $R/gpu_tests_a.log $R/gpu_tests_b.log; do grep -E "PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS|passed|failed|rc=" $f | tail -30; done
for f in $R/before.json $R/after.json $R/none.json; do python3 -c "import json; r=json.load(open('$f')); print('$f', r['step_s_median'], r['parameter_sha256'][:16], r['stats'].get('cuda_errors'))" 2>&1 | tail -1; done
echo "total $(( $(date +%s) - T0 )) s"
