#!/usr/bin/env bash
# call B: do the launching threads run faster on CPUs of their own? Each run trains while a shell
# loop places the process's threads every 0.1 s: "pinned": the main thread on CPU 0, PyTorch's
# autograd thread on CPU 1, every other thread (deepum's, PyTorch's, the CUDA driver's) on CPUs 2-15;
# "idleclass": deepum's threads in the SCHED_IDLE class (they yield to any other thread at once),
# nothing pinned; "free": as they come. none and deepum alternated, GPT-2 and BERT-Large in bf16 with
# fused AdamW at half their footprints.
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
place() {  # $1 pid, $2 how: pinned | idleclass
  local pid=$1 how=$2
  declare -A placed  # each thread once
  while kill -0 $pid 2>/dev/null; do
    local py=$(pgrep -P $pid | head -1)
    if [ -n "$py" ]; then
      for task in /proc/$py/task/*; do
        local tid=${task##*/}
        [ -n "${placed[$tid]}" ] && continue
        local name=$(cat $task/comm 2>/dev/null)
        # a thread not named yet is placed again until it is (PyTorch and deepum name theirs at start)
        if [ "$name" = python3 ] && [ $tid != $py ]; then [ $how = idleclass ] && continue; else placed[$tid]=1; fi
        if [ $how = pinned ]; then
          if [ $tid = $py ]; then taskset -p -c 0 $tid; elif [ "$name" = pt_autograd_0 ]; then taskset -p -c 1 $tid; else taskset -p -c 2-15 $tid; fi
        elif [[ $name == deepum-* ]]; then chrt -i -p 0 $tid; fi
      done > /dev/null 2>&1
    fi
    sleep 0.1
  done
}
tlb() { awk '/TLB/ {s=0; for (i=2; i<=NF; i++) if ($i ~ /^[0-9]+$/) s+=$i; print s}' /proc/interrupts; }
run() {  # $1 name, $2 mode, $3 placement (free | pinned | idleclass), rest: flags
  local name=$1 mode=$2 how=$3; shift 3
  local t0=$(tlb) s0=$(date +%s.%N)
  PYTHONPATH=. timeout 120 python3 bench/train.py --mode $mode --precision bf16 --steps 10 --warmup 4 -o $R/$name.json "$@" > $R/$name.log 2>&1 &
  local pid=$!
  [ $how != free ] && place $pid $how &
  wait $pid
  local t1=$(tlb) s1=$(date +%s.%N)
  python3 -c "
import json; d=json.load(open('$R/$name.json')); t=d.get('enqueue_thread_median') or {}
print('$name', round(d['step_s_median'],4), [round(x,3) for x in d['step_s'][4:]], d['parameter_sha256'][:12], 'enq', round(d['enqueue_s_median'],4),
      'run', round(t.get('run_s') or 0,4), 'hook', round(d.get('hook_s_per_step') or 0,4), 'tlb/s', round(($t1-$t0)/($s1-$s0)))" 2>&1 | tail -1
}
G="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
B="--workload bert-large --layers 24 --seq 128 --batch 8"
GC="--capacity 6138363904"; BC="--capacity 3921674240"
for i in 1 2; do
  run gpt2_none_free_$i none free $G
  run gpt2_deepum_free_$i deepum free $G $GC
  run gpt2_deepum_pinned_$i deepum pinned $G $GC
  run gpt2_none_pinned_$i none pinned $G
  run gpt2_deepum_idleclass_$i deepum idleclass $G $GC
done
for i in 1 2; do
  run bert_none_free_$i none free $B
  run bert_deepum_free_$i deepum free $B $BC
  run bert_deepum_pinned_$i deepum pinned $B $BC
  run bert_none_pinned_$i none pinned $B
  run bert_deepum_idleclass_$i deepum idleclass $B $BC
done
echo "done at $(( $(date +%s) - T0 )) s"
cd $OUT && tar -czf placement.tgz records && rm -rf records
