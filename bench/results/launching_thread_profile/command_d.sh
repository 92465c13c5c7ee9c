#!/usr/bin/env bash
# call D: what being awake costs the launching threads without pressure, part by part. deepum without
# a budget: asleep (asleep_managed.json: segments managed, no launch hook), awake as committed
# (awake_without_pressure.json), awake with the launch callback delivered but returning at once
# (bench/probes/empty_launch_hook.patch), and that without CUPTI's kernel records
# (+ bench/probes/no_kernel_records.patch), each patched tree built in a copy; none beside them.
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
build_copy() {  # $1 folder, rest: patches
  local tree=$1; shift
  rm -rf $tree && cp -r . $tree && for p in "$@"; do (cd $tree && git apply $p) || echo "patch $p failed"; done
  (cd $tree && PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.load_torch_extension(n.online_engine())") > $R/build_$(basename $tree).log 2>&1 || tail -20 $R/build_$(basename $tree).log
}
EMPTY=/tmp/empty_hook; BARE=/tmp/empty_hook_no_records
build_copy $EMPTY bench/probes/empty_launch_hook.patch &
build_copy $BARE bench/probes/empty_launch_hook.patch bench/probes/no_kernel_records.patch &
wait
echo "copies built at $(( $(date +%s) - T0 )) s"
P=bench/results/launching_thread_profile
run() {  # $1 tree, $2 name, $3 mode, rest: flags
  local tree=$1 name=$2 mode=$3; shift 3
  (cd $tree && PYTHONPATH=. timeout 120 python3 bench/train.py --mode $mode --precision bf16 --steps 10 --warmup 4 -o $R/$name.json "$@" > $R/$name.log 2>&1)
  python3 -c "
import json; d=json.load(open('$R/$name.json')); s=d.get('stats') or {}
print('$name', round(d['step_s_median'],4), d['parameter_sha256'][:12], 'enq', round(d['enqueue_s_median'],4), 'hook', round(d.get('hook_s_per_step') or 0,4),
      {k: round(v*1e3, 1) for k, v in (d.get('hook_split_s_per_step') or {}).items()}, 'launch', round(d.get('launch_driver_s_per_step') or 0,4),
      'launches', s.get('launches'), 'asleep', s.get('asleep'))" 2>&1 | tail -1
}
G="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
B="--workload bert-large --layers 24 --seq 128 --batch 8"
AWAKE="--config $P/awake_without_pressure.json"; ASLEEP="--config $P/asleep_managed.json"
for i in 1 2; do
  run . gpt2_none_$i none $G
  run . gpt2_asleep_$i deepum $G $ASLEEP
  run . gpt2_awake_$i deepum $G $AWAKE
  run $EMPTY gpt2_empty_hook_$i deepum $G $AWAKE
  run $BARE gpt2_empty_hook_no_records_$i deepum $G $AWAKE
done
run . bert_none none $B
run . bert_asleep deepum $B $ASLEEP
run . bert_awake deepum $B $AWAKE
run $EMPTY bert_empty_hook deepum $B $AWAKE
run $BARE bert_empty_hook_no_records deepum $B $AWAKE
echo "done at $(( $(date +%s) - T0 )) s"
cd $OUT && tar -czf awake_parts.tgz records && rm -rf records
