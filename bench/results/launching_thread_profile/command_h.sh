#!/usr/bin/env bash
# call H: the policy's decisions on a thread of their own again (bench/probes/decision_thread.patch
# ported to this tree as decision_thread_ported.patch), with the memory map's lock as it is and with
# it spinning a while before it sleeps (+ adaptive_map_lock.patch), against the committed engine;
# GPT-2 and BERT-Large in bf16 with fused AdamW at half their footprints, alternated; none beside.
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
build_copy() {  # $1 folder, rest: patches
  local tree=$1; shift
  rm -rf $tree && cp -r . $tree && for p in "$@"; do (cd $tree && git apply $p) || echo "patch $p failed"; done
  (cd $tree && python3 setup.py -q build_ext --inplace && PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.load_torch_extension(n.online_engine())") > $R/build_$(basename $tree).log 2>&1 || tail -30 $R/build_$(basename $tree).log
}
DT=/tmp/decision_thread; DTS=/tmp/decision_thread_spinning
build_copy $DT bench/probes/decision_thread_ported.patch &
build_copy $DTS bench/probes/decision_thread_ported.patch bench/probes/adaptive_map_lock.patch &
wait
rm -f $R/build_*.log
echo "copies built at $(( $(date +%s) - T0 )) s"
run() {  # $1 tree, $2 name, $3 mode, rest: flags
  local tree=$1 name=$2 mode=$3; shift 3
  (cd $tree && PYTHONPATH=. timeout 120 python3 bench/train.py --mode $mode --precision bf16 --steps 10 --warmup 4 -o $R/$name.json "$@" > $R/$name.log 2>&1)
  python3 -c "
import json; d=json.load(open('$R/$name.json')); s=d.get('stats') or {}
print('$name', round(d['step_s_median'],4), [round(x,3) for x in d['step_s']], d['parameter_sha256'][:12], 'enq', round(d['enqueue_s_median'],4),
      'hook', round(d.get('hook_s_per_step') or 0,4), {k: round(v*1e3, 1) for k, v in (d.get('hook_split_s_per_step') or {}).items()},
      'launch', round(d.get('launch_driver_s_per_step') or 0,4), 'decider s', round((s.get('decision_thread_ns') or 0)/1e9,2), 'err', s.get('cuda_errors'))" 2>&1 | tail -1
}
G="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
B="--workload bert-large --layers 24 --seq 128 --batch 8"
GC="--capacity 6138363904"; BC="--capacity 3921674240"
run . gpt2_none none $G
for i in 1 2; do
  run . gpt2_committed_$i deepum $G $GC
  run $DT gpt2_thread_$i deepum $G $GC
  run $DTS gpt2_thread_spinning_$i deepum $G $GC
done
run . bert_none none $B
for i in 1 2; do
  run . bert_committed_$i deepum $B $BC
  run $DT bert_thread_$i deepum $B $BC
  run $DTS bert_thread_spinning_$i deepum $B $BC
done
echo "done at $(( $(date +%s) - T0 )) s"
cd $OUT && tar -czf decision_thread.tgz records && rm -rf records
