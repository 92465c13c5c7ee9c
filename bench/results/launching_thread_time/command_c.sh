#!/usr/bin/env bash
# call C: do deepum's move threads slow the launching threads by sharing their cores? The CPUs are
# split by physical core into two halves (A: the process, so its launching threads; B: deepum's move
# threads and worker, bench/probes/move_threads_on_their_cpus.patch built in a copy), against deepum
# as committed on every CPU, alternated on one machine; the 24-layer GPT-2 and BERT-Large in bf16 with
# fused AdamW at half their footprints (the users_way capacities), none beside them on A and on every
# CPU, 10 steps of which 4 warm-up.
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
lscpu > $R/lscpu.txt 2>&1
grep -H . /sys/devices/system/cpu/cpu*/topology/thread_siblings_list > $R/siblings.txt 2>&1
read A B < <(python3 -c "
import glob, re
cores = {}
for f in glob.glob('/sys/devices/system/cpu/cpu[0-9]*/topology/thread_siblings_list'):
    cpu = int(re.search(r'cpu(\d+)/', f).group(1)); cores.setdefault(open(f).read().strip(), []).append(cpu)
groups = sorted(sorted(c) for c in cores.values()); half = len(groups) // 2
print(','.join(str(c) for g in groups[:half] for c in g), ','.join(str(c) for g in groups[half:] for c in g))")
echo "launching CPUs $A, move CPUs $B" | tee $R/cpu_sets.txt
PIN=/tmp/move_cpus; rm -rf $PIN && cp -r . $PIN && (cd $PIN && git apply bench/probes/move_threads_on_their_cpus.patch) || echo "patch failed"
(cd $PIN && PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.load_torch_extension(n.online_engine())") > $R/build_pin.log 2>&1 || tail -20 $R/build_pin.log
echo "copy built at $(( $(date +%s) - T0 )) s"
run() {  # $1 tree, $2 name, $3 "" or the CPUs of the process, $4 mode, rest: flags
  local tree=$1 name=$2 cpus=$3 mode=$4; shift 4
  local prefix=""; [ -n "$cpus" ] && prefix="taskset -c $cpus"
  (cd $tree && DEEPUM_PROBE_MOVE_CPUS=$B PYTHONPATH=. timeout 120 $prefix python3 bench/train.py --mode $mode --precision bf16 --steps 10 --warmup 4 -o $R/$name.json "$@" > $R/$name.log 2>&1)
  python3 -c "
import json; d=json.load(open('$R/$name.json')); s=d.get('stats') or {}
t=d.get('enqueue_thread_median') or {}
print('$name', round(d.get('step_s_median'),4), [round(x,3) for x in d['step_s']], (d.get('parameter_sha256') or '')[:12],
      'enq', round(d.get('enqueue_s_median') or 0,4), 'hook', round(d.get('hook_s_per_step') or 0,4),
      {k: round(v, 4) for k, v in (d.get('hook_split_s_per_step') or {}).items()},
      'launch', round(d.get('launch_driver_s_per_step') or 0,4), 'err', s.get('cuda_errors'))
print('   main', {k: round(v,4) for k, v in t.items() if k in ('wall_s','run_s','runqueue_s','asleep_s')})
for name, th in ((d.get('thread_states') or {}).get('threads') or {}).items():
  if th['run_s'] > 0.002: print('   ', name, th['threads'], round(th['run_s'],4), round(th['runqueue_s'],4), th['states'])" 2>&1 | tail -10
}
G="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
B_="--workload bert-large --layers 24 --seq 128 --batch 8"
GC="--capacity 6138363904"; BC="--capacity 3921674240"
run . gpt2_none "" none $G --sample-thread-step 6
run . gpt2_none_on_a "$A" none $G --sample-thread-step 6
run . gpt2_deepum "" deepum $G $GC --sample-thread-step 6
run $PIN gpt2_apart "$A" deepum $G $GC --sample-thread-step 6
run . gpt2_deepum_2 "" deepum $G $GC
run $PIN gpt2_apart_2 "$A" deepum $G $GC
run . gpt2_deepum_on_a "$A" deepum $G $GC
run . gpt2_deepum_3 "" deepum $G $GC
run $PIN gpt2_apart_3 "$A" deepum $G $GC
run . bert_none "" none $B_
run . bert_deepum "" deepum $B_ $BC
run $PIN bert_apart "$A" deepum $B_ $BC
run . bert_deepum_2 "" deepum $B_ $BC
run $PIN bert_apart_2 "$A" deepum $B_ $BC
echo "done at $(( $(date +%s) - T0 )) s"
