#!/usr/bin/env bash
# The sleeping engine: its GPU tests (GPU 0); the no-pressure check, the hook's cost, GPT-2 24L at 0.5
# and the link probes (GPU 1).
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
left() { echo $(( 530 - ($(date +%s) - T0) )); }
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -40 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
PT="python3 -m pytest -v -p no:cacheprovider -rs --durations=8"
(
export CUDA_VISIBLE_DEVICES=0
PYTHONPATH=. timeout 200 $PT tests/test_runtime_gpu.py tests/test_access_patterns_gpu.py > $R/gpu_tests_runtime_access.log 2>&1; echo "rc=$? in $(( $(date +%s) - T0 )) s" >> $R/gpu_tests_runtime_access.log
PYTHONPATH=. timeout $(left) $PT tests/test_safety_gpu.py -k "not twenty" > $R/gpu_tests_safety.log 2>&1; echo "rc=$? in $(( $(date +%s) - T0 )) s" >> $R/gpu_tests_safety.log
) &
(
export CUDA_VISIBLE_DEVICES=1
PYTHONPATH=. timeout 200 python3 bench/no_pressure.py --out $R/no_pressure --workloads gpt2,bert-large,resnet152,dlrm,moe --steps 12 --warmup 2 --timeout 90 --size "gpt2=--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4" --size "bert-large=--layers 24 --seq 128 --batch 8" --size "moe=--layers 12 --hidden 768 --heads 12 --seq 512 --batch 2" > $R/no_pressure.log 2>&1
PYTHONPATH=. timeout 70 python3 bench/hook_cost.py -o $R/hook_cost.json > $R/hook_cost.log 2>&1
PYTHONPATH=. timeout 60 python3 bench/train.py --workload gpt2 --mode deepum --capacity 5961154560 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --steps 6 --warmup 2 -o $R/gpt2_deepum_b0.50.json > $R/gpt2.log 2>&1
PYTHONPATH=. timeout 40 python3 bench/pinned_copy_probe.py -o $R/pinned_copy_probe.json > $R/pinned.log 2>&1
[ $(left) -gt 30 ] && PYTHONPATH=. timeout $(left) python3 bench/link_paths.py --gib 2 -o $R/link_paths.json > $R/link_paths.log 2>&1
) &
wait
grep -E "PASSED|FAILED|ERROR| passed| failed|rc=" $R/gpu_tests_runtime_access.log $R/gpu_tests_safety.log | tail -40
tail -12 $R/no_pressure.log; tail -5 $R/hook_cost.log
python3 -c "import json; r=json.load(open('$R/gpt2_deepum_b0.50.json')); print('gpt2', r['step_s_median'], r['step_s'], r['parameter_sha256'][:10], r['stats'].get('asleep'), r['stats'].get('cuda_errors'))" 2>&1 | tail -1
tail -3 $R/pinned.log $R/link_paths.log
echo "total $(( $(date +%s) - T0 )) s"
tar -czf $OUT/m.tgz -C $OUT records
