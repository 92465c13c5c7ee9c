#!/usr/bin/env bash
# call A: the 24-layer GPT-2 and BERT-Large at half their footprints on one machine, drops by their
# discard alone (the default), 10 steps of which 4 warm-up: none; deepum with the defaults, with eight
# threads in each pool, and with eight eviction and eight prefetch threads; BERT-Large's step 6
# timeline and a recorded BERT-Large trace for offline replay; alternated repeats.
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
python3 -c "
from deepum.config import DeepUMConfig as C
C(eviction_threads=8, prefetch_threads=8, discard_threads=8).save('$R/all8.json')
C(eviction_threads=8, prefetch_threads=8).save('$R/move8.json')
C(lookahead=64).save('$R/lookahead64.json')"
run() {  # $1 name, $2 mode, rest: flags
  local name=$1 mode=$2; shift 2
  PYTHONPATH=. timeout 150 python3 bench/train.py --mode $mode --steps 10 --warmup 4 -o $R/$name.json "$@" > $R/$name.log 2>&1
  python3 -c "
import json; d=json.load(open('$R/$name.json')); s=d.get('stats') or {}
print('$name', round(d.get('step_s_median'),4), [round(x,3) for x in d['step_s']], (d.get('parameter_sha256') or '')[:12],
      'in/out GB', round((d.get('h2d_bytes_per_step') or 0)/1e9,2), round((d.get('d2h_bytes_per_step') or 0)/1e9,2),
      'err', s.get('cuda_errors'), 'refused', s.get('direct_eviction_refusals'), s.get('direct_prefetch_refusals'), s.get('direct_discard_refusals'))" 2>&1 | tail -1
}
G="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
B="--workload bert-large --layers 24 --seq 128 --batch 8"
GC="--capacity 6002049024"; BC="--capacity 3811573760"
run gpt2_none none $G
run bert_none none $B
run bert_deepum_t6 deepum $B $BC --timeline-step 6
run gpt2_deepum deepum $G $GC
run gpt2_all8 deepum $G $GC --config $R/all8.json
run gpt2_move8 deepum $G $GC --config $R/move8.json
run bert_deepum deepum $B $BC
run bert_all8 deepum $B $BC --config $R/all8.json
run bert_move8 deepum $B $BC --config $R/move8.json
run bert_lookahead64 deepum $B $BC --config $R/lookahead64.json
run gpt2_all8_t6 deepum $G $GC --config $R/all8.json --timeline-step 6
run gpt2_move8_2 deepum $G $GC --config $R/move8.json
run gpt2_deepum_2 deepum $G $GC
run bert_move8_2 deepum $B $BC --config $R/move8.json
run bert_deepum_2 deepum $B $BC
run gpt2_none_2 none $G
run bert_none_2 none $B
run bert_recorded deepum $B $BC --record $R/bert_trace.npz
echo "total $(( $(date +%s) - T0 )) s"
