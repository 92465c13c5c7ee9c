#!/usr/bin/env bash
# call C1: GPU tests on 3388970 (host mapping on by default); the sweep's GPT-2 24L, BERT-Large 24L and DLRM at 0.75 and 0.5
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
left() { echo $(( 575 - ($(date +%s) - T0) )); }
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout 200 python3 -m pytest -v -p no:cacheprovider -rs tests/test_runtime_gpu.py tests/test_access_patterns_gpu.py > $R/gpu_tests.log 2>&1; echo "rc=$? in $(( $(date +%s) - T0 )) s" >> $R/gpu_tests.log
grep -E "FAILED|ERROR| passed| failed|rc=" $R/gpu_tests.log | tail -20
PYTHONPATH=. timeout $(left) python3 bench/run_all.py --out $R/sweep_b --workloads gpt2,bert-large,dlrm --budgets 0.75,0.5 --modes none,um,deepum --steps 6 --warmup 2 --timeout 150 --size "gpt2=--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4" --size "bert-large=--layers 24 --seq 128 --batch 8" > $R/sweep_b.log 2>&1
tail -30 $R/sweep_b.log
echo "total $(( $(date +%s) - T0 )) s"
tar -czf $OUT/c1.tgz -C $OUT records
