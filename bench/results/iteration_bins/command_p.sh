#!/usr/bin/env bash
# call 2: binned fault figures (no flush at marks), name-hashed exec IDs: no-pressure, GPU tests,
# warm start with and without address randomization, the owed twenty-exits and launcher tests
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R/warm_plain $R/warm_noaslr $R/np
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
git rev-parse --short HEAD > $R/rev.txt; nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
(
  export CUDA_VISIBLE_DEVICES=1
  for i in 1 2; do PYTHONPATH=. python3 out/va_probe.py 2>/dev/null | tail -1; done > $R/va_plain.txt
  for i in 1 2; do PYTHONPATH=. python3 out/noaslr.py python3 out/va_probe.py 2>/dev/null | tail -1; done > $R/va_noaslr.txt
  PYTHONPATH=. timeout 150 python3 out/noaslr.py python3 bench/warm_start_gpu.py --out $R/warm_noaslr --workloads gpt2,resnet152 \
    --size 'gpt2=--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4' \
    --footprint-from bench/results/sweep_sizes --steps 8 --timeout 60 > $R/warm_noaslr/run.log 2>&1
  PYTHONPATH=. timeout 300 python3 -m pytest -q -p no:cacheprovider --durations=5 tests/test_safety_gpu.py::test_exit_without_disable_twenty_times_ends_cleanly tests/test_launcher_gpu.py > $R/owed_tests.log 2>&1
  echo "gpu1 done $(( $(date +%s) - T0 )) s" >> $R/owed_tests.log
) &
(
  export CUDA_VISIBLE_DEVICES=0
  PYTHONPATH=. timeout 300 python3 bench/no_pressure.py --out $R/np --workloads gpt2,bert-large,resnet152,dlrm,moe --steps 12 --warmup 2 --timeout 60 \
    --size 'gpt2=--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4' --size 'bert-large=--layers 24 --seq 128 --batch 8' \
    --size 'moe=--layers 12 --hidden 768 --heads 12 --seq 512 --batch 2' > $R/np/run.log 2>&1
  PYTHONPATH=. timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_runtime_gpu.py tests/test_access_patterns_gpu.py > $R/gpu_tests.log 2>&1
  echo "gpu0 done $(( $(date +%s) - T0 )) s" >> $R/gpu_tests.log
)
wait
cat $R/va_plain.txt $R/va_noaslr.txt | cut -c1-400; tail -5 $R/warm_noaslr/run.log; tail -9 $R/np/run.log; tail -3 $R/gpu_tests.log; tail -4 $R/owed_tests.log
tar -czf $OUT/p.tgz -C $OUT records
echo "total $(( $(date +%s) - T0 )) s"
