#!/usr/bin/env bash
# call I: the sweep on this tree (foreach reader, discards without the lock), GPT-2 24L, BERT-Large 24L and DLRM at 0.75 and 0.5
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
PYTHONPATH=. timeout $(( 585 - ($(date +%s) - T0) )) python3 bench/run_all.py --out $R/sweep --workloads gpt2,bert-large,dlrm --budgets 0.75,0.5 --modes none,um,deepum --steps 6 --warmup 2 --timeout 150 --size "gpt2=--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4" --size "bert-large=--layers 24 --seq 128 --batch 8" > $R/sweep.log 2>&1
grep -E "speedup_over_um|vs_in_memory\`" $R/sweep.log | tail -12; echo "total $(( $(date +%s) - T0 )) s"
rm -rf $R/sweep/logs
tar -czf $OUT/i.tgz -C $R sweep
