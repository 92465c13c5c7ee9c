#!/usr/bin/env bash
# call A: where the launching thread's enqueue goes (bench/thread_time.py): running, waiting for a CPU,
# or asleep in the kernel, and the kernel functions it sleeps in (step 6 sampled), for the 24-layer
# GPT-2 and BERT-Large in bf16 with fused AdamW at half their footprints (the users_way capacities),
# none beside deepum, 10 steps of which 4 warm-up; GPT-2 also with glibc's malloc kept from returning
# memory to the kernel (no munmap or brk shrink on the launching thread: PYTHONMALLOC=malloc and
# MALLOC_*_ thresholds), to test whether the address space's lock held by the migrations stalls it.
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
nproc > $R/cpus.txt
run() {  # $1 name, $2 mode, rest: flags
  local name=$1 mode=$2; shift 2
  PYTHONPATH=. timeout 120 python3 bench/train.py --mode $mode --precision bf16 --steps 10 --warmup 4 -o $R/$name.json "$@" > $R/$name.log 2>&1
  python3 -c "
import json; d=json.load(open('$R/$name.json')); s=d.get('stats') or {}
t=d.get('enqueue_thread_median') or {}
print('$name', round(d.get('step_s_median'),4), [round(x,3) for x in d['step_s']], (d.get('parameter_sha256') or '')[:12],
      'enq', round(d.get('enqueue_s_median') or 0,4), 'hook', round(d.get('hook_s_per_step') or 0,4),
      'launch', round(d.get('launch_driver_s_per_step') or 0,4), 'err', s.get('cuda_errors'))
print('   thread', {k: round(v,4) for k, v in t.items()})
st=d.get('thread_states')
if st: print('   states', st['samples'], st['states'], list(st['wchan'].items())[:10])" 2>&1 | tail -3
}
G="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
B="--workload bert-large --layers 24 --seq 128 --batch 8"
GC="--capacity 6138363904"; BC="--capacity 3921674240"
KEEP="PYTHONMALLOC=malloc MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=4294967296 MALLOC_TOP_PAD_=268435456"
run gpt2_none none $G --sample-thread-step 6
run gpt2_deepum deepum $G $GC --sample-thread-step 6
run gpt2_deepum_2 deepum $G $GC
env $KEEP bash -c "$(declare -f run); R=$R; run gpt2_deepum_keep deepum $G $GC --sample-thread-step 6"
run gpt2_none_2 none $G
env $KEEP bash -c "$(declare -f run); R=$R; run gpt2_none_keep none $G"
run gpt2_deepum_3 deepum $G $GC
env $KEEP bash -c "$(declare -f run); R=$R; run gpt2_deepum_keep_2 deepum $G $GC"
run bert_none none $B --sample-thread-step 6
run bert_deepum deepum $B $BC --sample-thread-step 6
echo "done at $(( $(date +%s) - T0 )) s"
