#!/usr/bin/env bash
# call C: the same step with and without pressure, launch by launch. deepum awake from the first
# launch without a budget (awake_without_pressure.json: the hook reads every launch, the policy sees
# no pressure, nothing moves, segments stay managed) against deepum at half the footprint, step 6's
# timeline of each (its spans give every launch's hook and launch call on the launching threads, so
# the framework's time between two launches can be compared launch by launch); GPT-2 and BERT-Large
# in bf16 with fused AdamW.
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
run() {  # $1 name, $2 mode, rest: flags
  local name=$1 mode=$2; shift 2
  PYTHONPATH=. timeout 150 python3 bench/train.py --mode $mode --precision bf16 --steps 10 --warmup 4 -o $R/$name.json "$@" > $R/$name.log 2>&1
  python3 -c "
import json; d=json.load(open('$R/$name.json')); b=d.get('timeline') or {}
print('$name', round(d['step_s_median'],4), d['parameter_sha256'][:12], 'enq', round(d['enqueue_s_median'],4), 'hook', round(d.get('hook_s_per_step') or 0,4),
      {k: round(v/1e6,1) for k, v in b.items() if k.startswith('thread_') or k in ('gpu_busy_ns','gpu_idle_ns','window_ns')})" 2>&1 | tail -1
}
G="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
B="--workload bert-large --layers 24 --seq 128 --batch 8"
A="--config bench/results/launching_thread_profile/awake_without_pressure.json"
run gpt2_none none $G
run gpt2_awake deepum $G $A --timeline-step 6
run gpt2_pressure deepum $G --capacity 6138363904 --timeline-step 6
run gpt2_awake_2 deepum $G $A --timeline-step 6
run gpt2_pressure_2 deepum $G --capacity 6138363904 --timeline-step 6
run bert_none none $B
run bert_awake deepum $B $A --timeline-step 6
run bert_pressure deepum $B --capacity 3921674240 --timeline-step 6
echo "done at $(( $(date +%s) - T0 )) s"
cd $OUT && tar -czf launch_by_launch.tgz records && rm -rf records
