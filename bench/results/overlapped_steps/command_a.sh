#!/usr/bin/env bash
# call A: steps issued back to back as a training loop that does not synchronize each step
# (bench/train.py --overlap-steps: a step's time from its start to the next's) against steps separated
# by synchronizations, for `none` and for deepum at half the footprint, alternated; GPT-2 and
# BERT-Large in bf16 with fused AdamW; then the CPU tests of the overlapped loop with torch.
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
run() {  # $1 name, $2 mode, rest: flags
  local name=$1 mode=$2; shift 2
  PYTHONPATH=. timeout 150 python3 bench/train.py --mode $mode --precision bf16 --steps 10 --warmup 4 -o $R/$name.json "$@" > $R/$name.log 2>&1
  python3 -c "
import json; d=json.load(open('$R/$name.json'))
print('$name', round(d['step_s_median'],4), d['parameter_sha256'][:12], 'enq', round(d['enqueue_s_median'],4), 'hook', round(d.get('hook_s_per_step') or 0,4), 'steps', [round(s,3) for s in d['step_s'][4:]])" 2>&1 | tail -1
}
G="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
B="--workload bert-large --layers 24 --seq 128 --batch 8"
for i in 1 2; do
  run gpt2_none_synced_$i none $G
  run gpt2_none_overlapped_$i none $G --overlap-steps
  run gpt2_deepum_synced_$i deepum $G --capacity 6138363904
  run gpt2_deepum_overlapped_$i deepum $G --capacity 6138363904 --overlap-steps
done
for i in 1 2; do
  run bert_none_synced_$i none $B
  run bert_none_overlapped_$i none $B --overlap-steps
  run bert_deepum_synced_$i deepum $B --capacity 3921674240
  run bert_deepum_overlapped_$i deepum $B --capacity 3921674240 --overlap-steps
done
echo "runs done at $(( $(date +%s) - T0 )) s"
python3 -m pytest -q -p no:cacheprovider tests/test_bench_cpu.py -k overlapped > $R/cpu_tests.log 2>&1; tail -2 $R/cpu_tests.log
echo "done at $(( $(date +%s) - T0 )) s"
