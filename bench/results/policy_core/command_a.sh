#!/usr/bin/env bash
# GPU check A: build, GPU tests, and the 24-layer GPT-2 at 5.55 GiB with the engine before the policy
# core (out/baseline = 15b5ca3) and after it, interleaved, in one call.
export DEEPUM_NO_OVERSUBSCRIBE=1
R=$OUT/records; mkdir -p $R
nvidia-smi --query-gpu=name,memory.free,driver_version --format=csv > $R/gpu.txt
python3 -c "import torch; print(torch.__version__, torch.version.cuda)" >> $R/gpu.txt
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || { tail -50 $R/build.log; }
(cd out/baseline && python3 setup.py -q build_ext --inplace > $R/build_baseline.log 2>&1)
START=$(date +%s)
PYTHONPATH=. timeout 330 python3 -m pytest -q -p no:cacheprovider ${GPU_TESTS:-tests/test_runtime_gpu.py} > $R/gpu_tests.log 2>&1
echo "gpu tests rc=$? in $(( $(date +%s) - START )) s" >> $R/gpu_tests.log
tail -25 $R/gpu_tests.log
ARGS="--mode deepum --capacity 5961154560 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --steps 20 --warmup 5"
for i in 1 2; do
  (cd out/baseline && PYTHONPATH=. timeout 150 python3 bench/train.py $ARGS -o $R/before_deepum_$i.json > $R/before_$i.log 2>&1)
  PYTHONPATH=. timeout 150 python3 bench/train.py $ARGS -o $R/after_deepum_$i.json > $R/after_$i.log 2>&1
  for f in $R/before_deepum_$i.json $R/after_deepum_$i.json; do
    python3 -c "import json,sys; r=json.load(open('$f')); print('$f', r['step_s_median'], r['faults_per_step'] if 'faults_per_step' in r else '', r['parameter_sha256'][:16], r['stats'].get('cuda_errors'))" 2>&1 | tail -1
  done
done
tail -5 $R/after_1.log
cd $OUT && tar czf records.tgz records && rm -rf records
