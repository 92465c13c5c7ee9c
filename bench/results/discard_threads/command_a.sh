#!/usr/bin/env bash
# call A: invalidation's discards and populations from threads of their own (DeepUMConfig.discard_threads,
# default 2) against the worker's stream through the CUDA driver (discard_threads 0), side by side: the
# 24-layer GPT-2 and BERT-Large at half their footprints (the sweep's capacities), 10 steps of which 4
# warm-up, step 7's timeline captured, beside none and deepum without invalidation; then the GPU safety
# tests but the compiled, twenty-exits and fault-injection ones, as time allows.
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
python3 -c "from deepum.config import DeepUMConfig; DeepUMConfig(discard_threads=0).save('$R/stream_discards.json')"
run() {  # $1 name, $2 mode, rest: flags
  local name=$1 mode=$2; shift 2
  PYTHONPATH=. timeout 120 python3 bench/train.py --mode $mode --steps 10 --warmup 4 -o $R/$name.json "$@" > $R/$name.log 2>&1
  python3 -c "
import json; d=json.load(open('$R/$name.json')); s=d.get('stats') or {}; t=d.get('timeline') or {}
print('$name', round(d.get('step_s_median'),4), [round(x,3) for x in d['step_s']], (d.get('parameter_sha256') or '')[:12],
      'err', s.get('cuda_errors'), s.get('last_cuda_error'), 'refused', s.get('direct_discard_refusals'), 'discard', s.get('discard_bytes'), 'populate', s.get('populate_bytes'),
      'cancelled', s.get('discards_cancelled'), 'waits', s.get('allocation_waits_for_discard'), 'holds', s.get('allocation_holds_for_discard'),
      'thread', t.get('thread_hook_ns'), t.get('thread_launch_call_ns'), t.get('thread_other_ns'))" 2>&1 | tail -1
}
G="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
B="--workload bert-large --layers 24 --seq 128 --batch 8"
run gpt2_none none $G
run gpt2_threads deepum $G --capacity 6002049024 --timeline-step 7
run gpt2_stream deepum $G --capacity 6002049024 --timeline-step 7 --config $R/stream_discards.json
run gpt2_no_invalidate deepum-no-invalidate $G --capacity 6002049024
run bert_none none $B
run bert_threads deepum $B --capacity 3811573760 --timeline-step 7
run bert_stream deepum $B --capacity 3811573760 --timeline-step 7 --config $R/stream_discards.json
echo "benchmarks done at $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout $(( 585 - ($(date +%s) - T0) )) python3 -m pytest -v -p no:cacheprovider -rs --timeout 150 tests/test_safety_gpu.py \
  -k "not compiled and not twenty_times and not injected" > $R/safety.log 2>&1
echo "safety rc=$? at $(( $(date +%s) - T0 )) s"
grep -E "PASSED|FAILED|ERROR|SKIPPED|Timeout|passed|failed" $R/safety.log | tail -30
