#!/usr/bin/env bash
# call E: the sweep's other workloads at half their footprints (its capacities and sizes), 8 steps of
# which 3 warm-up: discard_threads 4 (default) against 0 (the worker's stream), side by side.
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
python3 -c "from deepum.config import DeepUMConfig; DeepUMConfig(discard_threads=0).save('$R/discard_threads_0.json')"
run() {  # $1 name, rest: flags
  local name=$1; shift
  PYTHONPATH=. timeout 150 python3 bench/train.py --mode deepum --steps 8 --warmup 3 -o $R/$name.json "$@" > $R/$name.log 2>&1
  python3 -c "
import json; d=json.load(open('$R/$name.json')); s=d.get('stats') or {}
print('$name', round(d.get('step_s_median'),4), [round(x,3) for x in d['step_s']], (d.get('parameter_sha256') or '')[:12],
      'err', s.get('cuda_errors'), 'refused', s.get('direct_discard_refusals'), 'cancelled', s.get('discards_cancelled'))" 2>&1 | tail -1
}
R1="--workload resnet152 --batch 16 --image 224 --capacity 1972371456"
M="--workload moe --layers 12 --hidden 768 --heads 12 --seq 512 --batch 2 --capacity 6350176256"
D="--workload dlrm --tables 8 --rows 500000 --dim 64 --lookups 32 --batch 2048 --capacity 652214272"
for w in R1 M D; do
  run ${w}_threads4 ${!w}
  run ${w}_stream ${!w} --config $R/discard_threads_0.json
done
echo "total $(( $(date +%s) - T0 )) s"
