#!/usr/bin/env bash
# call A: traces for replay recorded without a budget (deepum, 8 steps, no warm-up left out), beside the
# GPU runs they are compared with: the 24-layer BERT-Large in fp32 (foreach Adam) with um and deepum at
# half its footprint (3,811,573,760 bytes, as bench/results/dense_at_half), and the 24-layer GPT-2 in
# bf16 with fused AdamW with um at half its footprint (6,138,363,904 bytes, as bench/results/users_way;
# its none and deepum runs are bench/results/decision_thread's calls B and C).
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
run() {  # $1 name, $2 mode, rest: flags
  local name=$1 mode=$2; shift 2
  PYTHONPATH=. timeout 150 python3 bench/train.py --mode $mode -o $R/$name.json "$@" > $R/$name.log 2>&1
  python3 -c "
import json; d=json.load(open('$R/$name.json')); s=d.get('stats') or {}
print('$name', round(d.get('step_s_median'),4), [round(x,3) for x in d['step_s']], (d.get('parameter_sha256') or '')[:12],
      'enq', round(d.get('enqueue_s_median') or 0,4), 'hook', round(d.get('hook_s_per_step') or 0,4),
      'launches', s.get('launches'), 'err', s.get('cuda_errors'))" 2>&1 | tail -1
}
G="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --precision bf16"
B="--workload bert-large --layers 24 --seq 128 --batch 8"
run bert_recorded deepum $B --steps 8 --warmup 0 --record $R/bert_trace.npz
run gpt2_bf16_recorded deepum $G --steps 8 --warmup 0 --record $R/gpt2_bf16_trace.npz
run bert_none none $B --steps 8 --warmup 3
run bert_deepum deepum $B --capacity 3811573760 --steps 8 --warmup 3
run bert_um um $B --capacity 3811573760 --steps 6 --warmup 2
run gpt2_bf16_um um $G --capacity 6138363904 --steps 6 --warmup 2
ls -la $R/*.npz
echo "total $(( $(date +%s) - T0 )) s"
