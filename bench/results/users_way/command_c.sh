#!/usr/bin/env bash
# call C: the move threads with one poller a pool (the thread of the earliest waiting run; the others
# look again when a run comes ready or after 100 us) and one wake-up a command, against the threads
# as at ac8c524 (each waiting thread polling every 10 us, every thread woken at each hand-over): the
# 24-layer GPT-2 and BERT-Large in bf16 with fused AdamW at half their footprints (call A's
# capacities), alternated, none beside them; then the GPU safety tests that run the move threads, on
# the new header. Ran on the tree with bench/probes/one_poller.patch applied and the header as
# committed carried as out/old_move_pool.hpp (built in a copy of the tree); the patch was not kept.
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
OLD=/tmp/old_tree; rm -rf $OLD; cp -r . $OLD; cp out/old_move_pool.hpp $OLD/driver_hooks/move_pool.hpp
(cd $OLD && PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.load_torch_extension(n.online_engine())") > $R/old_build.log 2>&1 || tail -20 $R/old_build.log
echo "old tree built at $(( $(date +%s) - T0 )) s"
run() {  # $1 tree, $2 name, $3 mode, rest: flags
  local tree=$1 name=$2 mode=$3; shift 3
  (cd $tree && PYTHONPATH=. timeout 150 python3 bench/train.py --mode $mode --precision bf16 --steps 10 --warmup 4 -o $R/$name.json "$@" > $R/$name.log 2>&1)
  python3 -c "
import json; d=json.load(open('$R/$name.json')); s=d.get('stats') or {}
print('$name', round(d.get('step_s_median'),4), [round(x,3) for x in d['step_s']], (d.get('parameter_sha256') or '')[:12],
      'enq', round(d.get('enqueue_s_median') or 0,4), 'hook', round(d.get('hook_s_per_step') or 0,4), 'launch', round(d.get('launch_driver_s_per_step') or 0,4),
      'in/out GB', round((d.get('h2d_bytes_per_step') or 0)/1e9,2), round((d.get('d2h_bytes_per_step') or 0)/1e9,2),
      'err', s.get('cuda_errors'), 'refused', s.get('direct_eviction_refusals'), s.get('direct_prefetch_refusals'), s.get('direct_discard_refusals'))" 2>&1 | tail -1
}
G="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
B="--workload bert-large --layers 24 --seq 128 --batch 8"
GC="--capacity 6138363904"; BC="--capacity 3921674240"
run . gpt2_none none $G
run . bert_none none $B
for round in 1 2; do
  run $OLD gpt2_old_$round deepum $G $GC
  run . gpt2_new_$round deepum $G $GC
  run $OLD bert_old_$round deepum $B $BC
  run . bert_new_$round deepum $B $BC
done
echo "bench done at $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout $(( 590 - ($(date +%s) - T0) )) python3 -m pytest -v -p no:cacheprovider -rs --timeout 200 --durations=5 \
  tests/test_safety_gpu.py -k "side_stream or two_threads or move_threads or injected or record_stream or empty_cache or writes_the_recorded or dropped_in_a_session" > $R/safety.log 2>&1
echo "safety rc=$? at $(( $(date +%s) - T0 )) s"
grep -E "PASSED|FAILED|ERROR|SKIPPED|Timeout|passed|failed" $R/safety.log | tail -20
