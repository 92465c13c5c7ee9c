#!/usr/bin/env bash
# #11: runtime/access/launcher GPU tests on the final tree (GPU 0, first). #12: the sweep at sizes that
# matter, budgets 0.75 and 0.5, split over the two GPUs; GPT-2 24L bf16 at 0.5.
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
left() { echo $(( 570 - ($(date +%s) - T0) )); }
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1
echo "built in $(( $(date +%s) - T0 )) s"
PT="python3 -m pytest -v -p no:cacheprovider -rs --durations=12"
GPT="gpt2=--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
COMMON="--budgets 0.75,0.5 --modes none,um,deepum --steps 6 --warmup 2 --timeout 150"
(
export CUDA_VISIBLE_DEVICES=0
PYTHONPATH=. timeout 240 $PT tests/test_runtime_gpu.py tests/test_access_patterns_gpu.py tests/test_launcher_gpu.py > $R/gpu_tests_runtime_access_launcher.log 2>&1; echo "rc=$? in $(( $(date +%s) - T0 )) s" >> $R/gpu_tests_runtime_access_launcher.log
PYTHONPATH=. timeout $(left) python3 bench/run_all.py --out $R/sweep_a --workloads moe,resnet152 $COMMON --size "moe=--layers 12 --hidden 768 --heads 12 --seq 512 --batch 2" > $R/sweep_a.log 2>&1
) &
(
export CUDA_VISIBLE_DEVICES=1
PYTHONPATH=. timeout 330 python3 bench/run_all.py --out $R/sweep_b --workloads gpt2,bert-large,dlrm $COMMON --size "$GPT" --size "bert-large=--layers 24 --seq 128 --batch 8" > $R/sweep_b.log 2>&1
PYTHONPATH=. timeout $(left) python3 bench/run_all.py --out $R/sweep_c --workloads gpt2 --budgets 0.5 --modes none,um,deepum --steps 6 --warmup 2 --timeout 120 --size "$GPT --precision bf16" > $R/sweep_c.log 2>&1
) &
wait
grep -E "PASSED|FAILED|ERROR| passed| failed|rc=" $R/gpu_tests_runtime_access_launcher.log | tail -20
for f in $R/sweep_a.log $R/sweep_b.log $R/sweep_c.log; do echo "== $f"; tail -25 $f; done
echo "total $(( $(date +%s) - T0 )) s"
tar -czf $OUT/l.tgz -C $OUT records
