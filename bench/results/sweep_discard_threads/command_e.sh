#!/usr/bin/env bash
# call E: the 24-layer GPT-2 and BERT-Large at half their footprints on one machine, 10 steps of which 4
# warm-up: none, deepum (the defaults), eight eviction threads, eight threads in each pool, and deepum
# without invalidation; then GPT-2 with step 6's timeline.
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
python3 -c "from deepum.config import DeepUMConfig as C; C(eviction_threads=8).save('$R/eviction8.json'); C(eviction_threads=8, prefetch_threads=8, discard_threads=8).save('$R/all8.json')"
run() {  # $1 name, $2 mode, rest: flags
  local name=$1 mode=$2; shift 2
  PYTHONPATH=. timeout 150 python3 bench/train.py --mode $mode --steps 10 --warmup 4 -o $R/$name.json "$@" > $R/$name.log 2>&1
  python3 -c "
import json; d=json.load(open('$R/$name.json')); s=d.get('stats') or {}
print('$name', round(d.get('step_s_median'),4), [round(x,3) for x in d['step_s']], (d.get('parameter_sha256') or '')[:12],
      'err', s.get('cuda_errors'), 'refused', s.get('direct_eviction_refusals'), s.get('direct_prefetch_refusals'), s.get('direct_discard_refusals'))" 2>&1 | tail -1
}
G="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --capacity 6002049024"
B="--workload bert-large --layers 24 --seq 128 --batch 8 --capacity 3811573760"
for w in G B; do
  n=$( [ $w = G ] && echo gpt2 || echo bert )
  run ${n}_none none ${!w}
  run ${n}_deepum deepum ${!w}
  run ${n}_eviction8 deepum ${!w} --config $R/eviction8.json
  run ${n}_all8 deepum ${!w} --config $R/all8.json
  run ${n}_no_invalidate deepum-no-invalidate ${!w}
  [ $w = G ] && run ${n}_deepum_t6 deepum ${!w} --timeline-step 6
done
echo "total $(( $(date +%s) - T0 )) s"
