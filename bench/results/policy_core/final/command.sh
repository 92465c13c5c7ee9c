#!/usr/bin/env bash
# GPU check C: every GPU test, verbose, and the 24-layer GPT-2 in mode deepum at 5.55 GiB, with the
# engine as committed (fail-closed fallbacks, the launcher).
export DEEPUM_NO_OVERSUBSCRIBE=1
cd out/head  # the committed tree
R=$OUT/records; mkdir -p $R
nvidia-smi --query-gpu=name,memory.free,driver_version --format=csv > $R/gpu.txt
python3 -c "import torch, transformers; print(torch.__version__, torch.version.cuda, transformers.__version__)" >> $R/gpu.txt 2>&1
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
START=$(date +%s)
PYTHONPATH=. timeout 330 python3 -m pytest -v -p no:cacheprovider -rs tests/test_runtime_gpu.py tests/test_access_patterns_gpu.py tests/test_launcher_gpu.py > $R/gpu_tests_verbose.log 2>&1
echo "gpu tests rc=$? in $(( $(date +%s) - START )) s" >> $R/gpu_tests_verbose.log
grep -E "PASSED|FAILED|ERROR|SKIPPED|passed|failed" $R/gpu_tests_verbose.log | tail -25
PYTHONPATH=. timeout 150 python3 bench/train.py --mode deepum --capacity 5961154560 --layers 24 --hidden 1024 --heads 16 \
  --seq 512 --batch 4 --steps 20 --warmup 5 -o $R/train_deepum.json > $R/train_deepum.log 2>&1
python3 -c "import json; r=json.load(open('$R/train_deepum.json')); print('deepum', r['step_s_median'], r['faults_per_step'], r['parameter_sha256'][:16], r['stats']['cuda_errors'])"
cd $OUT && tar czf records.tgz records && rm -rf records
