#!/usr/bin/env bash
# call E: the prediction window's entries recycled (prefetcher.hpp's Window) against the tree before
# (its prefetcher.hpp, policy.hpp and oracle.hpp carried as out/old/ and built in a copy): first
# bench/policy_cost.py on this host's CPU in both trees (the bf16 GPT-2 trace recorded without a
# budget), then the 24-layer GPT-2 and BERT-Large in bf16 with fused AdamW at half their footprints
# (the users_way capacities), alternated, 10 steps of which 4 warm-up, with the hook's split.
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
OLD=/tmp/old_tree; rm -rf $OLD && cp -r . $OLD && cp out/old/* $OLD/driver_hooks/
(cd $OLD && python3 setup.py -q build_ext --inplace && PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.load_torch_extension(n.online_engine())") > $R/old_build.log 2>&1 || tail -20 $R/old_build.log
echo "old tree built at $(( $(date +%s) - T0 )) s"
T=bench/results/unbudgeted_traces/call_a/gpt2_bf16_trace.npz
for tree in . $OLD . $OLD; do
  name=$([ $tree = . ] && echo new || echo old)
  (cd $tree && PYTHONPATH=. python3 bench/policy_cost.py --trace $T --capacity 6138363904 -o $R/policy_cost_${name}_$RANDOM.json | sed "s/^/$name /")
done
echo "policy costs at $(( $(date +%s) - T0 )) s"
run() {  # $1 tree, $2 name, $3 mode, rest: flags
  local tree=$1 name=$2 mode=$3; shift 3
  (cd $tree && PYTHONPATH=. timeout 120 python3 bench/train.py --mode $mode --precision bf16 --steps 10 --warmup 4 -o $R/$name.json "$@" > $R/$name.log 2>&1)
  python3 -c "
import json; d=json.load(open('$R/$name.json')); s=d.get('stats') or {}
t=d.get('enqueue_thread_median') or {}; h=d.get('hook_split_s_per_step') or {}
dec=(h.get('policy') or 0)-(h.get('release') or 0)-(h.get('translate') or 0)
print('$name', round(d.get('step_s_median'),4), [round(x,3) for x in d['step_s']], (d.get('parameter_sha256') or '')[:12],
      'enq', round(d.get('enqueue_s_median') or 0,4), 'run', round(t.get('run_s') or 0,4), 'hook', round(d.get('hook_s_per_step') or 0,4),
      'decide', round(dec,4), {k: round(v, 4) for k, v in h.items() if v is not None},
      'launch', round(d.get('launch_driver_s_per_step') or 0,4), 'err', s.get('cuda_errors'))" 2>&1 | tail -1
}
G="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
B="--workload bert-large --layers 24 --seq 128 --batch 8"
GC="--capacity 6138363904"; BC="--capacity 3921674240"
run . gpt2_none none $G
for i in 1 2 3; do
  run . gpt2_new_$i deepum $G $GC
  run $OLD gpt2_old_$i deepum $G $GC
done
run . bert_none none $B
for i in 1 2; do
  run . bert_new_$i deepum $B $BC
  run $OLD bert_old_$i deepum $B $BC
done
echo "done at $(( $(date +%s) - T0 )) s"
