#!/usr/bin/env bash
# call J: the closest steps of the sweep against um, again in alternation: DLRM at 0.75 (its second
# step was 0.97x um's), four runs of each mode; GPT-2 24L at 0.75 (its first step came close before
# segment population), two runs each. bench/early_steps.py, 3 steps, footprints from this sweep.
export DEEPUM_NO_OVERSUBSCRIBE=1 PYTHONUNBUFFERED=1
T0=$(date +%s)
R=$OUT/records; rm -rf $R; mkdir -p $R
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout 240 python3 bench/early_steps.py --workloads dlrm --budget 0.75 --steps 3 --repeats 4 \
  --footprint-from bench/results/sweep_final/sweep --out $R/early_steps_dlrm > $R/early_dlrm.log 2>&1 || tail -5 $R/early_dlrm.log
echo "dlrm $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout $(( 420 - ($(date +%s) - T0) )) python3 bench/early_steps.py --workloads gpt2 --budget 0.75 --steps 3 --repeats 2 \
  --footprint-from bench/results/sweep_final/sweep --size "gpt2=--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4" \
  --out $R/early_steps_gpt2 > $R/early_gpt2.log 2>&1 || tail -5 $R/early_gpt2.log
echo "gpt2 $(( $(date +%s) - T0 )) s"
for w in dlrm gpt2; do python3 -c "
import json; d=json.load(open('$R/early_steps_$w/early_steps.json')); print(json.dumps(d)[:1500])" 2>&1 | head -5; done
rm -f $R/build.log $R/prebuild.log
tar -czf $OUT/j.tgz -C $OUT records; rm -rf $R
echo "total $(( $(date +%s) - T0 )) s"
