#!/usr/bin/env bash
# call A: managed segments populated on the GPU as they are made while the engine sleeps. The sleep
# GPU test (populated, unpopulated, um, under a budget); GPT-2 24L's first two steps at 0.75 (none
# once, then um and cold deepum three times each in alternation: bench/early_steps.py); DLRM's the same
# twice.
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
left() { echo $(( 570 - ($(date +%s) - T0) )); }
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout 120 python3 -m pytest -q -p no:cacheprovider -s tests/test_runtime_gpu.py -k sleeps > $R/sleep_test.log 2>&1
grep -E "passed|failed|^sleep|^train" $R/sleep_test.log | cut -c1-600
echo "test done $(( $(date +%s) - T0 )) s"
GPT2="gpt2=--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
PYTHONPATH=. timeout $(( $(left) - 120 )) python3 bench/early_steps.py --out $R/early_gpt2_075 --footprint-from bench/results/sweep_sizes \
  --workloads gpt2 --budget 0.75 --steps 2 --repeats 3 --timeout 100 --size "$GPT2" > $R/early_gpt2_075.log 2>&1
tail -8 $R/early_gpt2_075.log
echo "gpt2 done $(( $(date +%s) - T0 )) s"
DLRM="dlrm=--tables 8 --rows 500000 --dim 64 --lookups 32 --batch 2048"
PYTHONPATH=. timeout $(left) python3 bench/early_steps.py --out $R/early_dlrm_075 --footprint-from bench/results/sweep_sizes \
  --workloads dlrm --budget 0.75 --steps 2 --repeats 2 --timeout 60 --size "$DLRM" > $R/early_dlrm_075.log 2>&1
tail -8 $R/early_dlrm_075.log
echo "dlrm done $(( $(date +%s) - T0 )) s"
tar -czf $OUT/a.tgz -C $OUT records; rm -rf $R
