#!/usr/bin/env bash
# call D: the host-map toy diagnosed (recorded trace, placements); the sweep's GPT-2 24L, BERT-Large 24L, DLRM again with footprints from the allocator's peak
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
left() { echo $(( 580 - ($(date +%s) - T0) )); }
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
CUBLAS_WORKSPACE_CONFIG=:4096:8 PYTHONPATH=. timeout 60 python3 bench/results/sweep_host_map/diagnosis/diag_hm.py > $OUT/diag.log 2>&1; tail -3 $OUT/diag.log
PYTHONPATH=. timeout $(left) python3 bench/run_all.py --out $R/sweep_b --workloads gpt2,bert-large,dlrm --budgets 0.75,0.5 --modes none,um,deepum --steps 6 --warmup 2 --timeout 150 --size "gpt2=--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4" --size "bert-large=--layers 24 --seq 128 --batch 8" > $R/sweep_b.log 2>&1
grep -v "^\[" $R/sweep_b.log | tail -30
echo "total $(( $(date +%s) - T0 )) s"
tar -czf $OUT/d.tgz -C $OUT records
rm -rf $R
