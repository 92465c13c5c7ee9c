#!/usr/bin/env bash
# call E: GPT-2 24L's warm start at 0.5 (none, um, cold deepum writing its state, warm deepum reading it:
# bench/warm_start_gpu.py, 8 steps), with the worker's time per kind of move; then the MoE's first two
# steps at 0.75 (um and cold deepum twice each in alternation).
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
left() { echo $(( 575 - ($(date +%s) - T0) )); }
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
GPT2="gpt2=--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
PYTHONPATH=. timeout $(( $(left) - 170 )) python3 bench/warm_start_gpu.py --out $R/warm_gpt2_050 --footprint-from bench/results/sweep_sizes \
  --workloads gpt2 --steps 8 --timeout 100 --budget 0.5 --size "$GPT2" > $R/warm_gpt2_050.log 2>&1
tail -4 $R/warm_gpt2_050.log
for f in $R/warm_gpt2_050/*.json; do python3 -c "
import json; d=json.load(open('$f')); s=d.get('stats') or {}
'step_s' in d and print('$(basename $f)', [round(x,3) for x in d.get('step_s') or []], (d.get('parameter_sha256') or '')[:12], s.get('warm_start'), d.get('worker_s_per_step'))" 2>/dev/null; done
echo "warm start done $(( $(date +%s) - T0 )) s"
rm -f $R/warm_*/*.deepum-warm
PYTHONPATH=. timeout $(left) python3 bench/early_steps.py --out $R/early_moe_0.75 --footprint-from bench/results/sweep_sizes \
  --workloads moe --budget 0.75 --steps 2 --repeats 2 --timeout 100 --size "moe=--layers 12 --hidden 768 --heads 12 --seq 512 --batch 2" > $R/early_moe_0.75.log 2>&1
tail -3 $R/early_moe_0.75.log
echo "moe done $(( $(date +%s) - T0 )) s"
tar -czf $OUT/e.tgz -C $OUT records; rm -rf $R
