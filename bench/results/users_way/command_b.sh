#!/usr/bin/env bash
# call B: does the launching thread slow with the move threads' number? The 24-layer GPT-2 and
# BERT-Large in bf16 autocast with fused AdamW at half their footprints (call A's capacities), one
# and two threads a pool against the defaults (four) and eight eviction and eight prefetch threads,
# each with step 6's timeline (the launching thread's gaps between launches), twice in alternation
# (eight threads once); none beside them. 10 steps of which 4 warm-up.
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
nproc > $R/nproc.txt; lscpu > $R/lscpu.txt 2>&1
python3 -c "
from deepum.config import DeepUMConfig as C
for n in (1, 2): C(eviction_threads=n, prefetch_threads=n, discard_threads=n).save(f'$R/pools{n}.json')
C(eviction_threads=8, prefetch_threads=8).save('$R/move8.json')"
run() {  # $1 name, $2 mode, rest: flags
  local name=$1 mode=$2; shift 2
  PYTHONPATH=. timeout 150 python3 bench/train.py --mode $mode --steps 10 --warmup 4 -o $R/$name.json "$@" > $R/$name.log 2>&1
  python3 -c "
import json; d=json.load(open('$R/$name.json')); s=d.get('stats') or {}
print('$name', round(d.get('step_s_median'),4), [round(x,3) for x in d['step_s']], (d.get('parameter_sha256') or '')[:12],
      'enq', round(d.get('enqueue_s_median') or 0,4), 'hook', round(d.get('hook_s_per_step') or 0,4), 'launch', round(d.get('launch_driver_s_per_step') or 0,4),
      'in/out GB', round((d.get('h2d_bytes_per_step') or 0)/1e9,2), round((d.get('d2h_bytes_per_step') or 0)/1e9,2),
      'err', s.get('cuda_errors'), 'refused', s.get('direct_eviction_refusals'), s.get('direct_prefetch_refusals'), s.get('direct_discard_refusals'))" 2>&1 | tail -1
}
G="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
B="--workload bert-large --layers 24 --seq 128 --batch 8"
GC="--capacity 6138363904"; BC="--capacity 3921674240"; T="--timeline-step 6"
run gpt2_none none $G --precision bf16
run bert_none none $B --precision bf16
for round in 1 2; do
  configs="pools1 pools2 defaults move8"; [ $round = 2 ] && configs="pools1 pools2 defaults"
  for p in $configs; do
    cfg=""; [ $p != defaults ] && cfg="--config $R/$p.json"
    run gpt2_${p}_$round deepum $G $GC --precision bf16 $T $cfg
    run bert_${p}_$round deepum $B $BC --precision bf16 $T $cfg
  done
done
echo "total $(( $(date +%s) - T0 )) s"
