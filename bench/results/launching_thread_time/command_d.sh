#!/usr/bin/env bash
# call D: deepum against the in-memory step, pair by pair: none and deepum alternated four times each on
# one machine, the 24-layer GPT-2 and BERT-Large in bf16 with fused AdamW at half their footprints (the
# users_way capacities), 10 steps of which 4 warm-up; the policy's part of the hook split further
# (hook_release_ns, hook_translate_ns).
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
run() {  # $1 name, $2 mode, rest: flags
  local name=$1 mode=$2; shift 2
  PYTHONPATH=. timeout 120 python3 bench/train.py --mode $mode --precision bf16 --steps 10 --warmup 4 -o $R/$name.json "$@" > $R/$name.log 2>&1
  python3 -c "
import json; d=json.load(open('$R/$name.json')); s=d.get('stats') or {}
t=d.get('enqueue_thread_median') or {}
print('$name', round(d.get('step_s_median'),4), [round(x,3) for x in d['step_s']], (d.get('parameter_sha256') or '')[:12],
      'enq', round(d.get('enqueue_s_median') or 0,4), 'run', round(t.get('run_s') or 0,4), 'hook', round(d.get('hook_s_per_step') or 0,4),
      {k: round(v, 4) for k, v in (d.get('hook_split_s_per_step') or {}).items() if v is not None},
      'launch', round(d.get('launch_driver_s_per_step') or 0,4), 'err', s.get('cuda_errors'))" 2>&1 | tail -1
}
G="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
B="--workload bert-large --layers 24 --seq 128 --batch 8"
GC="--capacity 6138363904"; BC="--capacity 3921674240"
for i in 1 2 3 4; do
  run gpt2_none_$i none $G
  run gpt2_deepum_$i deepum $G $GC
done
for i in 1 2 3 4; do
  run bert_none_$i none $B
  run bert_deepum_$i deepum $B $BC
done
echo "done at $(( $(date +%s) - T0 )) s"
