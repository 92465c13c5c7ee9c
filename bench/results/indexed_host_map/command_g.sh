#!/usr/bin/env bash
# call G: the schedule (Belady's MIN over the remembered iteration, DeepUMConfig.schedule) on the GPU:
# deepum at 0.5 with the schedule off (the default) and on, side by side, at the capacities of the sweep
# (records in sweep/), GPT-2 24L, BERT-Large 24L, ResNet-152 and the MoE.
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R/schedule
left() { echo $(( 585 - ($(date +%s) - T0) )); }
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo '{"schedule": true}' > $R/schedule_on.json
S=bench/results/indexed_host_map/sweep
pair() {  # $1 workload record name, $2 train.py workload, $3 size flags
  CAP=$(python3 -c "import json;print(json.load(open('$S/$1_deepum_b0.50.json'))['capacity_bytes'])")
  for V in off on; do
    CFG=""; [ $V = on ] && CFG="--config $R/schedule_on.json"
    PYTHONPATH=. timeout $(left) python3 bench/train.py --workload $2 --mode deepum $CFG -o $R/schedule/$1_deepum-schedule-${V}_b0.50.json --steps 8 --warmup 3 $3 --reference $S/$1_none_full.json --capacity $CAP > $R/schedule/$1_$V.log 2>&1
    python3 -c "
import json; d=json.load(open('$R/schedule/$1_deepum-schedule-${V}_b0.50.json')); s=d.get('stats') or {}
print('$1 schedule $V', d.get('status'), 'step', round(d['step_s_median'],4), [round(x,3) for x in d['step_s']], 'h2d', d.get('h2d_bytes_per_step'), 'd2h', d.get('d2h_bytes_per_step'), 'sha', d.get('parameter_sha256','')[:12], 'hook', round(d.get('hook_s_per_step') or 0,3))" || tail -5 $R/schedule/$1_$V.log
  done
}
pair gpt2 gpt2 "--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
pair bert-large bert-large "--layers 24 --seq 128 --batch 8"
pair moe moe "--layers 12 --hidden 768 --heads 12 --seq 512 --batch 2"
pair resnet152 resnet152 "--batch 16 --image 224"
echo "total $(( $(date +%s) - T0 )) s"
tar -czf $OUT/g.tgz -C $OUT records; rm -rf $R
