#!/usr/bin/env bash
# call B: every thread's time while the main thread issues a step (bench/thread_time.py, deepum's
# threads now named), and what CUPTI's activity records cost the launching threads: deepum as committed
# against a copy without kernel records (bench/probes/no_kernel_records.patch) and one without kernel
# records or unified-memory counters (with no_unified_memory_counters.patch), alternated on one machine;
# the 24-layer GPT-2 and BERT-Large in bf16 with fused AdamW at half their footprints (the users_way
# capacities), none beside them, 10 steps of which 4 warm-up.
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
build_copy() {  # $1 folder, rest: patches
  local tree=$1; shift
  rm -rf $tree && cp -r . $tree && for p in "$@"; do (cd $tree && git apply $p) || echo "patch $p failed"; done
  (cd $tree && PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.load_torch_extension(n.online_engine())") > $R/build_$(basename $tree).log 2>&1 || tail -20 $R/build_$(basename $tree).log
}
NOKR=/tmp/no_kernel_records; NOREC=/tmp/no_records
build_copy $NOKR bench/probes/no_kernel_records.patch
build_copy $NOREC bench/probes/no_kernel_records.patch bench/probes/no_unified_memory_counters.patch
echo "copies built at $(( $(date +%s) - T0 )) s"
run() {  # $1 tree, $2 name, $3 mode, rest: flags
  local tree=$1 name=$2 mode=$3; shift 3
  (cd $tree && PYTHONPATH=. timeout 120 python3 bench/train.py --mode $mode --precision bf16 --steps 10 --warmup 4 -o $R/$name.json "$@" > $R/$name.log 2>&1)
  python3 -c "
import json; d=json.load(open('$R/$name.json')); s=d.get('stats') or {}
t=d.get('enqueue_thread_median') or {}
print('$name', round(d.get('step_s_median'),4), [round(x,3) for x in d['step_s']], (d.get('parameter_sha256') or '')[:12],
      'enq', round(d.get('enqueue_s_median') or 0,4), 'hook', round(d.get('hook_s_per_step') or 0,4),
      {k: round(v, 4) for k, v in (d.get('hook_split_s_per_step') or {}).items()},
      'launch', round(d.get('launch_driver_s_per_step') or 0,4), 'err', s.get('cuda_errors'))
print('   main', {k: round(v,4) for k, v in t.items() if k in ('wall_s','run_s','asleep_s')})
for name, th in ((d.get('thread_states') or {}).get('threads') or {}).items():
  if th['run_s'] > 0.002: print('   ', name, th['threads'], round(th['run_s'],4), round(th['runqueue_s'],4), th['states'], list(th['wchan'].items())[:4])" 2>&1 | tail -12
}
G="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
B="--workload bert-large --layers 24 --seq 128 --batch 8"
GC="--capacity 6138363904"; BC="--capacity 3921674240"
run . gpt2_none none $G --sample-thread-step 6
run . gpt2_deepum deepum $G $GC --sample-thread-step 6
run $NOKR gpt2_no_kernel_records deepum $G $GC --sample-thread-step 6
run $NOREC gpt2_no_records deepum $G $GC --sample-thread-step 6
run . gpt2_deepum_2 deepum $G $GC
run $NOKR gpt2_no_kernel_records_2 deepum $G $GC
run $NOREC gpt2_no_records_2 deepum $G $GC
run . bert_none none $B
run . bert_deepum deepum $B $BC
run $NOKR bert_no_kernel_records deepum $B $BC
run $NOREC bert_no_records deepum $B $BC
run . bert_deepum_2 deepum $B $BC
run $NOKR bert_no_kernel_records_2 deepum $B $BC
run $NOREC bert_no_records_2 deepum $B $BC
echo "done at $(( $(date +%s) - T0 )) s"
