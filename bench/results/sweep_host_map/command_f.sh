#!/usr/bin/env bash
# call F: the sweep's other four workloads at 0.5 over 8 steps with 4 of warm-up (deepum's steady state)
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
echo "built in $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout $(( 460 - ($(date +%s) - T0) )) python3 bench/run_all.py --out $R/steady --workloads moe,bert-large,resnet152,dlrm --budgets 0.5 --modes none,um,deepum --steps 8 --warmup 4 --timeout 120 --size "moe=--layers 12 --hidden 768 --heads 12 --seq 512 --batch 2" --size "bert-large=--layers 24 --seq 128 --batch 8" > $R/steady.log 2>&1
grep -E "speedup_over_um|vs_in_memory\`|timeout|failed" $R/steady.log
echo "total $(( $(date +%s) - T0 )) s"
tar -czf $OUT/f.tgz -C $OUT records
rm -rf $R
