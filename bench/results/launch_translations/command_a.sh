#!/usr/bin/env bash
# call A: a launch's translation to the policy's blocks taken from its exec ID's last launch, and the
# commands' lanes in an array by the policy's block, against the tree before (its engine.hpp,
# memory_map.hpp and policy.hpp carried as out/old/ and built in a copy of the tree), alternated on one
# machine: the 24-layer GPT-2, then BERT-Large, in bf16 with fused AdamW at half their footprints (the
# users_way capacities), 10 steps of which 4 warm-up; none last.
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
OLD=/tmp/old_tree; rm -rf $OLD && cp -r . $OLD && cp out/old/* $OLD/driver_hooks/
(cd $OLD && PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.load_torch_extension(n.online_engine())") > $R/old_build.log 2>&1 || tail -20 $R/old_build.log
echo "old tree built at $(( $(date +%s) - T0 )) s"
run() {  # $1 tree (. or $OLD), $2 name, $3 mode, rest: flags
  local tree=$1 name=$2 mode=$3; shift 3
  (cd $tree && PYTHONPATH=. timeout 60 python3 bench/train.py --mode $mode --precision bf16 --steps 10 --warmup 4 -o $R/$name.json "$@" > $R/$name.log 2>&1)
  python3 -c "
import json; d=json.load(open('$R/$name.json')); s=d.get('stats') or {}
print('$name', round(d.get('step_s_median'),4), [round(x,3) for x in d['step_s']], (d.get('parameter_sha256') or '')[:12],
      'enq', round(d.get('enqueue_s_median') or 0,4), 'hook', round(d.get('hook_s_per_step') or 0,4),
      {k: round(v, 4) for k, v in (d.get('hook_split_s_per_step') or {}).items()},
      'launch', round(d.get('launch_driver_s_per_step') or 0,4), 'err', s.get('cuda_errors'))" 2>&1 | tail -1
}
G="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
B="--workload bert-large --layers 24 --seq 128 --batch 8"
GC="--capacity 6138363904"; BC="--capacity 3921674240"
run . gpt2_new deepum $G $GC
run $OLD gpt2_old deepum $G $GC
run . gpt2_new_2 deepum $G $GC
run $OLD gpt2_old_2 deepum $G $GC
run . gpt2_none none $G
run . bert_new deepum $B $BC
run $OLD bert_old deepum $B $BC
echo "total $(( $(date +%s) - T0 )) s"
