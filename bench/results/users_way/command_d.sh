#!/usr/bin/env bash
# call D: a shorter prediction window against the launching thread: the 24-layer GPT-2 and BERT-Large
# in bf16 with fused AdamW at half their footprints (call A's capacities), lookahead 16 against the
# default 32, none beside them; 10 steps of which 4 warm-up; one run each (the session's last device
# minutes).
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
python3 -c "
from deepum.config import DeepUMConfig as C
C(lookahead=16).save('$R/lookahead16.json')"
run() {  # $1 name, $2 mode, rest: flags
  local name=$1 mode=$2; shift 2
  PYTHONPATH=. timeout 60 python3 bench/train.py --mode $mode --precision bf16 --steps 10 --warmup 4 -o $R/$name.json "$@" > $R/$name.log 2>&1
  python3 -c "
import json; d=json.load(open('$R/$name.json')); s=d.get('stats') or {}
print('$name', round(d.get('step_s_median'),4), [round(x,3) for x in d['step_s']], (d.get('parameter_sha256') or '')[:12],
      'enq', round(d.get('enqueue_s_median') or 0,4), 'hook', round(d.get('hook_s_per_step') or 0,4), 'launch', round(d.get('launch_driver_s_per_step') or 0,4),
      'faults', d.get('faults_per_step'), 'err', s.get('cuda_errors'))" 2>&1 | tail -1
}
G="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
B="--workload bert-large --layers 24 --seq 128 --batch 8"
GC="--capacity 6138363904"; BC="--capacity 3921674240"
run gpt2_none none $G
run gpt2_lookahead16 deepum $G $GC --config $R/lookahead16.json
run gpt2_defaults deepum $G $GC
run bert_none none $B
run bert_lookahead16 deepum $B $BC --config $R/lookahead16.json
run bert_defaults deepum $B $BC
echo "total $(( $(date +%s) - T0 )) s"
