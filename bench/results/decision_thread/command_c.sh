#!/usr/bin/env bash
# call C: is the decision thread's spin what slows the launching thread? The 24-layer GPT-2 in bf16 with
# fused AdamW at half its footprint, the tree of bench/probes/decision_thread.patch (its thread spins
# DEEPUM_DECISION_SPIN_US microseconds for the next launch before it sleeps, 200 unless set): the
# launching thread deciding (off), the decision thread spinning 200 us and not at all (0), none beside.
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
      'launch', round(d.get('launch_driver_s_per_step') or 0,4), 'err', s.get('cuda_errors'))" 2>&1 | tail -1
}
G="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
GC="--capacity 6138363904"
OFF="--config $R/launching_thread.json"
run gpt2_none none $G
run gpt2_off deepum $G $GC $OFF
DEEPUM_DECISION_SPIN_US=0 run gpt2_on_nospin deepum $G $GC
run gpt2_on_spin deepum $G $GC
DEEPUM_DECISION_SPIN_US=0 run gpt2_on_nospin_2 deepum $G $GC
run gpt2_off_2 deepum $G $GC $OFF
run gpt2_none_2 none $G
echo "total $(( $(date +%s) - T0 )) s"
