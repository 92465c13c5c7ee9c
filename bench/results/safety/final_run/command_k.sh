#!/usr/bin/env bash
# #11 final: every GPU test, verbose, split over the two GPUs; GPT-2 24L at half its footprint before
# (6fc6322) and after (HEAD) plus none on GPU 1; hook cost and the no-pressure runs in the time left.
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
left() { echo $(( 565 - ($(date +%s) - T0) )); }
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
python3 -c "import torch, transformers; print(torch.__version__, torch.version.cuda, transformers.__version__)" >> $R/gpu.txt 2>&1
git log -1 --format=%H >> $R/gpu.txt 2>/dev/null
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log &
(cd out/baseline && python3 setup.py -q build_ext --inplace > $R/build_baseline.log 2>&1) &
wait
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1
echo "built in $(( $(date +%s) - T0 )) s"
PT="python3 -m pytest -v -p no:cacheprovider -rs --durations=12"
(
export CUDA_VISIBLE_DEVICES=0
PYTHONPATH=. timeout 300 $PT tests/test_safety_gpu.py -k twenty tests/test_runtime_gpu.py tests/test_access_patterns_gpu.py tests/test_launcher_gpu.py > $R/gpu_tests_0.log 2>&1; echo "rc=$? in $(( $(date +%s) - T0 )) s" >> $R/gpu_tests_0.log
[ $(left) -gt 40 ] && PYTHONPATH=. timeout $(left) python3 bench/hook_cost.py -o $R/hook_cost.json > $R/hook_cost.log 2>&1
) &
(
export CUDA_VISIBLE_DEVICES=1
PYTHONPATH=. timeout 330 $PT tests/test_safety_gpu.py -k "not twenty" > $R/gpu_tests_1.log 2>&1; echo "rc=$? in $(( $(date +%s) - T0 )) s" >> $R/gpu_tests_1.log
ARGS="--capacity 5961154560 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --steps 12 --warmup 4"
if [ $(left) -gt 150 ]; then
  (cd out/baseline && PYTHONPATH=. timeout 80 python3 bench/train.py --mode deepum $ARGS -o $R/before.json > $R/before.log 2>&1)
  PYTHONPATH=. timeout 80 python3 bench/train.py --mode deepum $ARGS -o $R/after.json > $R/after.log 2>&1
  PYTHONPATH=. timeout 50 python3 bench/train.py --mode none ${ARGS/--capacity 5961154560/} -o $R/none.json > $R/none.log 2>&1
fi
) &
wait
for f in $R/gpu_tests_0.log $R/gpu_tests_1.log; do grep -E "PASSED|FAILED|ERROR|XFAIL|XPASS| passed| failed|rc=" $f | tail -40; done
for f in $R/before.json $R/after.json $R/none.json; do python3 -c "import json; r=json.load(open('$f')); print('$f', r['step_s_median'], r['parameter_sha256'][:16], r['stats'].get('cuda_errors'))" 2>&1 | tail -1; done
tail -5 $R/hook_cost.log
echo "total $(( $(date +%s) - T0 )) s"
tar -czf $OUT/k.tgz -C $OUT records
