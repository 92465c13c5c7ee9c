#!/usr/bin/env bash
# call A: the 24-layer BERT-Large in fp32 with foreach Adam, `none` and deepum at half its footprint
# (3,811,573,760 bytes), steps issued back to back (bench/train.py --overlap-steps: a step's time from its
# start to the next's) and steps separated by synchronizations, taking turns, 12 steps of which 4
# warm-up, as many passes as start before LIMIT seconds (first argument, default 150) after the build.
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader > $R/gpu.txt
LIMIT=${1:-150}
B="--workload bert-large --layers 24 --seq 128 --batch 8"
run() {  # $1 name, $2 mode, rest: flags
  local name=$1 mode=$2; shift 2
  PYTHONPATH=. timeout 60 python3 bench/train.py --mode $mode --steps 12 --warmup 4 -o $R/$name.json "$@" > $R/$name.log 2>&1
  python3 -c "
import json; d=json.load(open('$R/$name.json'))
print('$name', round(d['step_s_median'],4), d['parameter_sha256'][:12], 'enqueue', round(d['enqueue_s_median'],4),
      'hook', round(d.get('hook_s_per_step') or 0,4), 'busy', round(d.get('gpu_busy_s_per_step') or 0,4), 'steps', [round(s,3) for s in d['step_s'][4:]])" 2>&1 | tail -1
}
for i in 1 2 3 4; do
  [ $(( $(date +%s) - T0 )) -lt $LIMIT ] || break
  run none_overlapped_$i none $B --overlap-steps
  run deepum_overlapped_$i deepum $B --capacity 3811573760 --overlap-steps
  run none_synced_$i none $B
  run deepum_synced_$i deepum $B --capacity 3811573760
done
echo "done at $(( $(date +%s) - T0 )) s"
tar -czf $OUT/records.tgz -C $OUT records && rm -rf $R
