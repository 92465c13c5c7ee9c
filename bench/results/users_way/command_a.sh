#!/usr/bin/env bash
# call A: Adam's step over host-mapped moments (foreach against fused, mapped against GPU memory); then
# the 24-layer GPT-2 and BERT-Large trained as users train transformers (bf16 autocast, fused AdamW) at
# half their footprints, each footprint measured here by an unbudgeted deepum run: none, um, deepum
# with the defaults and with eight eviction and eight prefetch threads, alternated repeats, and one
# step-6 timeline each; 10 steps of which 4 warm-up (um: 6 of which 2).
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
python3 bench/optimizer_over_link.py -o $R/optimizer_over_link.json > $R/optimizer_over_link.log 2>&1; tail -4 $R/optimizer_over_link.log
python3 -c "
from deepum.config import DeepUMConfig as C
C(eviction_threads=8, prefetch_threads=8).save('$R/move8.json')"
run() {  # $1 name, $2 mode, rest: flags
  local name=$1 mode=$2; shift 2
  PYTHONPATH=. timeout 150 python3 bench/train.py --mode $mode --precision bf16 -o $R/$name.json "$@" > $R/$name.log 2>&1
  python3 -c "
import json; d=json.load(open('$R/$name.json')); s=d.get('stats') or {}
print('$name', round(d.get('step_s_median'),4), [round(x,3) for x in d['step_s']], (d.get('parameter_sha256') or '')[:12],
      'enq', round(d.get('enqueue_s_median') or 0,4), 'hook', round(d.get('hook_s_per_step') or 0,4), 'busy', round(d.get('gpu_busy_s_per_step') or 0,4),
      'in/out GB', round((d.get('h2d_bytes_per_step') or 0)/1e9,2), round((d.get('d2h_bytes_per_step') or 0)/1e9,2), 'fp', d.get('footprint_bytes'),
      'err', s.get('cuda_errors'), 'refused', s.get('direct_eviction_refusals'), s.get('direct_prefetch_refusals'), s.get('direct_discard_refusals'))" 2>&1 | tail -1
}
half() { python3 -c "import json; print(int(json.load(open('$R/$1.json'))['footprint_bytes'] * 0.5))"; }
G="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
B="--workload bert-large --layers 24 --seq 128 --batch 8"
S="--steps 10 --warmup 4"
run gpt2_none none $G $S
run bert_none none $B $S
run gpt2_full deepum $G $S
run bert_full deepum $B $S
GC="--capacity $(half gpt2_full)"; BC="--capacity $(half bert_full)"; echo "capacities $GC $BC"
run gpt2_deepum deepum $G $GC $S
run bert_deepum deepum $B $BC $S
run gpt2_move8 deepum $G $GC $S --config $R/move8.json
run bert_move8 deepum $B $BC $S --config $R/move8.json
run gpt2_deepum_t6 deepum $G $GC $S --timeline-step 6
run bert_deepum_t6 deepum $B $BC $S --timeline-step 6
run gpt2_move8_2 deepum $G $GC $S --config $R/move8.json
run bert_move8_2 deepum $B $BC $S --config $R/move8.json
run gpt2_deepum_2 deepum $G $GC $S
run bert_deepum_2 deepum $B $BC $S
run gpt2_none_2 none $G $S
run bert_none_2 none $B $S
run gpt2_um um $G $GC --steps 6 --warmup 2
run bert_um um $B $BC --steps 6 --warmup 2
echo "total $(( $(date +%s) - T0 )) s"
