#!/usr/bin/env bash
# call A: the policy's decisions on a thread of their own (decision_thread, on) against the launching
# thread (off), alternated on one machine: the 24-layer GPT-2 and BERT-Large in bf16 with fused AdamW at
# half their footprints (the users_way capacities), none beside them, 10 steps of which 4 warm-up; GPT-2
# once more with step 6's timeline; then the GPU safety tests that train, race side streams and threads,
# capture a graph and inject CUDA failures, on the new default.
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
python3 -c "
from deepum.config import DeepUMConfig as C
C(decision_thread=False).save('$R/launching_thread.json')"
run() {  # $1 name, $2 mode, rest: flags
  local name=$1 mode=$2; shift 2
  PYTHONPATH=. timeout 90 python3 bench/train.py --mode $mode --precision bf16 --steps 10 --warmup 4 -o $R/$name.json "$@" > $R/$name.log 2>&1
  python3 -c "
import json; d=json.load(open('$R/$name.json')); s=d.get('stats') or {}
print('$name', round(d.get('step_s_median'),4), [round(x,3) for x in d['step_s']], (d.get('parameter_sha256') or '')[:12],
      'enq', round(d.get('enqueue_s_median') or 0,4), 'hook', round(d.get('hook_s_per_step') or 0,4),
      {k: round(v, 4) for k, v in (d.get('hook_split_s_per_step') or {}).items()},
      'decide', round((s.get('decision_thread_ns') or 0) / 1e9 / max(1, d.get('steps', 10)), 4),
      'launch', round(d.get('launch_driver_s_per_step') or 0,4), 'faults', d.get('faults_per_step'), 'err', s.get('cuda_errors'))" 2>&1 | tail -1
}
G="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
B="--workload bert-large --layers 24 --seq 128 --batch 8"
GC="--capacity 6138363904"; BC="--capacity 3921674240"
OFF="--config $R/launching_thread.json"
run gpt2_none none $G
run gpt2_on deepum $G $GC
run gpt2_off deepum $G $GC $OFF
run gpt2_on_2 deepum $G $GC
run gpt2_off_2 deepum $G $GC $OFF
run bert_none none $B
run bert_on deepum $B $BC
run bert_off deepum $B $BC $OFF
run bert_on_2 deepum $B $BC
run bert_off_2 deepum $B $BC $OFF
run gpt2_on_t6 deepum $G $GC --timeline-step 6
echo "benches done at $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout $(( 590 - ($(date +%s) - T0) )) python3 -m pytest -v -p no:cacheprovider -rs --timeout 200 --durations=5 \
  tests/test_safety_gpu.py -k "decision_thread or two_threads_on_two_streams or cuda_graph or side_stream or injected" > $R/safety.log 2>&1
echo "safety rc=$? at $(( $(date +%s) - T0 )) s"
grep -E "PASSED|FAILED|ERROR|SKIPPED|Timeout|passed|failed" $R/safety.log | tail -30
