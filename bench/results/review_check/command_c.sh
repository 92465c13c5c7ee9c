#!/usr/bin/env bash
# call C: the 24-layer GPT-2 at half its footprint, 12 steps of which 3 warm-up: deepum without
# invalidation with step 6's and (a second run) step 7's timeline captured, then deepum with step 6's.
source bench/device_setup.sh
G="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --capacity 6002049024 --steps 12 --warmup 3"
run() {  # $1 name, $2 mode, rest: flags
  local name=$1 mode=$2; shift 2
  PYTHONPATH=. timeout 150 python3 bench/train.py --mode $mode $G -o $R/$name.json "$@" > $R/$name.log 2>&1
  python3 -c "import json; d=json.load(open('$R/$name.json')); s=d.get('stats') or {}; t=d.get('timeline') or {}; print('$name', round(d.get('step_s_median'),4), [round(x,3) for x in d['step_s']], (d.get('parameter_sha256') or '')[:12], s.get('cuda_errors'), 'tl', t.get('step'), t.get('h2d_bytes'), t.get('d2h_bytes'))" 2>&1 | tail -1
}
run gpt2_no_invalidate_t6 deepum-no-invalidate --timeline-step 6
run gpt2_no_invalidate_t7 deepum-no-invalidate --timeline-step 7
run gpt2_deepum_t6 deepum --timeline-step 6
echo "total $(( $(date +%s) - T0 )) s"
