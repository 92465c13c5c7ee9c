#!/usr/bin/env bash
# call B: does a migrating thread slow another thread's launches (bench/launch_contention.py, 5,000
# launches per run, the four modes alternated three times); GPT-2 24L at 0.5 with step 4's timeline,
# now with the launching thread's spans (the hook, the rest of each launch call).
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; rm -rf $R; mkdir -p $R
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout 240 python3 bench/launch_contention.py --mib 1024 --launches 5000 --repeats 3 -o $R/launch_contention.json > $R/launch_contention.log 2>&1 || tail -5 $R/launch_contention.log
python3 -c "
import json; d=json.load(open('$R/launch_contention.json'))
for m, v in d['medians_by_mode'].items(): print(m, {k: round(x, 2) for k, x in v.items()})"
echo "probe done $(( $(date +%s) - T0 )) s"
GPT2=(--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4)
PYTHONPATH=. timeout 200 python3 bench/train.py "${GPT2[@]}" --steps 6 --warmup 3 --mode deepum --capacity 5961154560 \
  --timeline-step 4 -o $R/gpt2_deepum.json > $R/gpt2_deepum.log 2>&1 || tail -5 $R/gpt2_deepum.log
python3 -c "
import json; d=json.load(open('$R/gpt2_deepum.json')); t=d.get('timeline') or {}; s=d.get('stats') or {}
print('gpt2 deepum steps', [round(x,3) for x in d['step_s']], d.get('parameter_sha256','')[:12], 'errors', s.get('cuda_errors'))
print('  ', {k: (round(v/1e6,1) if k.endswith('_ns') else v) for k, v in t.items() if k not in ('spans','plot')})"
echo "runs done $(( $(date +%s) - T0 )) s"
tar -czf $OUT/b.tgz -C $OUT records; rm -rf $R
