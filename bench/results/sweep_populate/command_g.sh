#!/usr/bin/env bash
# call G: GPT-2 24L's first three steps at 0.5, um and cold deepum in alternation, three runs of each
# (the sweep's deepum step 2 was longer than um's); DLRM without pressure again, none and unbudgeted
# deepum in alternation four times each.
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; rm -rf $R; mkdir -p $R
left() { echo $(( 580 - ($(date +%s) - T0) )); }
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout $(left) python3 bench/early_steps.py --out $R/early_gpt2_0.5 --footprint-from bench/results/sweep_sizes \
  --workloads gpt2 --budget 0.5 --steps 3 --repeats 3 --timeout 100 \
  --size "gpt2=--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4" > $R/early_gpt2_0.5.log 2>&1
tail -4 $R/early_gpt2_0.5.log; echo "early done $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout $(left) python3 bench/no_pressure.py --out $R/no_pressure --workloads dlrm --steps 12 --warmup 2 \
  --repeats 4 --timeout 120 > $R/no_pressure.log 2>&1
tail -2 $R/no_pressure.log; echo "total $(( $(date +%s) - T0 )) s"
rm -rf $R/no_pressure/logs $R/early_gpt2_0.5/logs; tar -czf $OUT/g.tgz -C $OUT records; rm -rf $R
