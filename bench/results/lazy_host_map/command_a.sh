#!/usr/bin/env bash
# call A: blocks chosen for host mapping while resident are mapped as they are evicted. GPT-2 24L's first
# steps at 0.75 (none once, then um and cold deepum three times each in alternation: bench/early_steps.py),
# then its warm start at 0.5 (none, um, cold, warm: bench/warm_start_gpu.py).
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
left() { echo $(( 570 - ($(date +%s) - T0) )); }
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
GPT2="gpt2=--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
PYTHONPATH=. timeout $(( $(left) - 200 )) python3 bench/early_steps.py --out $R/early_gpt2_075 --footprint-from bench/results/sweep_sizes \
  --workloads gpt2 --budget 0.75 --steps 2 --repeats 3 --timeout 100 --size "$GPT2" > $R/early_gpt2_075.log 2>&1
tail -8 $R/early_gpt2_075.log
echo "early steps done $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout $(left) python3 bench/warm_start_gpu.py --out $R/warm_gpt2_050 --footprint-from bench/results/sweep_sizes \
  --workloads gpt2 --steps 8 --timeout 100 --budget 0.5 --size "$GPT2" > $R/warm_gpt2_050.log 2>&1
tail -6 $R/warm_gpt2_050.log
for f in $R/warm_gpt2_050/*.json; do python3 -c "
import json; d=json.load(open('$f')); s=d.get('stats') or {}
'step_s' in d and print('$(basename $f)', [round(x,3) for x in d.get('step_s') or []], (d.get('parameter_sha256') or '')[:12], s.get('warm_start'))" 2>/dev/null; done
echo "warm start done $(( $(date +%s) - T0 )) s"
rm -f $R/warm_*/*.deepum-warm
tar -czf $OUT/a.tgz -C $OUT records; rm -rf $R
