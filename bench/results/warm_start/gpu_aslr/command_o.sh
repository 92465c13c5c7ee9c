#!/usr/bin/env bash
# call 1 of the session: owed GPU tests, the no-pressure diagnosis, hook cost; warm start on GPU 1
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R/diag $R/warm
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1
echo "built in $(( $(date +%s) - T0 )) s"
git rev-parse --short HEAD > $R/rev.txt; nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
(
  export CUDA_VISIBLE_DEVICES=1
  PYTHONPATH=. timeout 420 python3 bench/warm_start_gpu.py --out $R/warm --workloads gpt2,bert-large,resnet152 \
    --size 'gpt2=--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4' --size 'bert-large=--layers 24 --seq 128 --batch 8' \
    --footprint-from bench/results/sweep_sizes --steps 8 --timeout 120 > $R/warm/run.log 2>&1
  echo "warm done $(( $(date +%s) - T0 )) s" >> $R/warm/run.log
) &
(
  export CUDA_VISIBLE_DEVICES=0
  for wl in "dlrm --tables 8 --rows 500000 --dim 64 --lookups 32 --batch 2048" "bert-large --layers 24 --seq 128 --batch 8"; do
    name=${wl%% *}
    for v in none um deepum deepum_nohook deepum_prefetched; do
      PYTHONPATH=. timeout 90 python3 out/diag_np.py $v $R/diag/${name}_$v.json --workload $wl 2>&1 | grep -v "^step\|Warning\|warn" | tail -3
    done
  done > $R/diag/diag.log 2>&1
  echo "diag done $(( $(date +%s) - T0 )) s" >> $R/diag/diag.log
  PYTHONPATH=. timeout 120 python3 bench/hook_cost.py -o $R/hook_cost.json > $R/hook_cost.log 2>&1
  PYTHONPATH=. timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_safety_gpu.py::test_exit_without_disable_twenty_times_ends_cleanly tests/test_launcher_gpu.py > $R/owed_tests.log 2>&1
  echo "tests done $(( $(date +%s) - T0 )) s" >> $R/owed_tests.log
) 
wait
cat $R/diag/diag.log; tail -8 $R/warm/run.log; tail -4 $R/hook_cost.log; tail -4 $R/owed_tests.log
tar -czf $OUT/o.tgz -C $OUT records
echo "total $(( $(date +%s) - T0 )) s"
