#!/usr/bin/env bash
# call C2: the host-mapping GPU test (fused Adam); the sweep's MoE (top-2 over 8 experts) and ResNet-152 at 0.75 and 0.5; GPT-2 24L bf16 at 0.5; GPT-2 24L fp32 at 0.5 over 10 steps (5 of warm-up)
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
left() { echo $(( 580 - ($(date +%s) - T0) )); }
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout 90 python3 -m pytest -v -p no:cacheprovider -rs tests/test_runtime_gpu.py -k "host_mapping" > $R/gpu_tests.log 2>&1; echo "rc=$? in $(( $(date +%s) - T0 )) s" >> $R/gpu_tests.log
grep -E "FAILED|ERROR|AssertionError| passed| failed|rc=" $R/gpu_tests.log | tail -8
COMMON="--modes none,um,deepum --steps 6 --warmup 2 --timeout 150"
PYTHONPATH=. timeout 340 python3 bench/run_all.py --out $R/sweep_a --workloads moe,resnet152 --budgets 0.75,0.5 $COMMON --size "moe=--layers 12 --hidden 768 --heads 12 --seq 512 --batch 2" > $R/sweep_a.log 2>&1
grep -E "speedup_over_um|vs_in_memory\`" $R/sweep_a.log; echo "a done $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout 110 python3 bench/run_all.py --out $R/sweep_c --workloads gpt2 --budgets 0.5 $COMMON --size "gpt2=--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --precision bf16" > $R/sweep_c.log 2>&1
grep -E "speedup_over_um|vs_in_memory\`" $R/sweep_c.log; echo "c done $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout $(left) python3 bench/run_all.py --out $R/sweep_d --workloads gpt2 --budgets 0.5 --modes none,um,deepum --steps 10 --warmup 5 --timeout 100 --size "gpt2=--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4" > $R/sweep_d.log 2>&1
grep -E "speedup_over_um|vs_in_memory\`" $R/sweep_d.log
echo "total $(( $(date +%s) - T0 )) s"
tar -czf $OUT/c2.tgz -C $OUT records
rm -rf $R
