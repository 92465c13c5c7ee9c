#!/usr/bin/env bash
# call A: a dropped dead block discarded alone (drop_to_host off) against discarded then moved to the
# host (the default), 24-layer GPT-2 and BERT-Large at half their footprints, 10 steps of which 4
# warm-up, alternated; then GPT-2 with drop_to_host off and step 6's timeline.
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
python3 -c "from deepum.config import DeepUMConfig as C; C(drop_to_host=False).save('$R/no_drop_to_host.json')"
run() {  # $1 name, $2 mode, rest: flags
  local name=$1 mode=$2; shift 2
  PYTHONPATH=. timeout 150 python3 bench/train.py --mode $mode --steps 10 --warmup 4 -o $R/$name.json "$@" > $R/$name.log 2>&1
  python3 -c "
import json; d=json.load(open('$R/$name.json')); s=d.get('stats') or {}
print('$name', round(d.get('step_s_median'),4), [round(x,3) for x in d['step_s']], (d.get('parameter_sha256') or '')[:12],
      'err', s.get('cuda_errors'), 'refused', s.get('direct_discard_refusals'), 'wait_ms', round((s.get('direct_discard_wait_ns') or 0)/1e6))" 2>&1 | tail -1
}
G="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --capacity 6002049024"
B="--workload bert-large --layers 24 --seq 128 --batch 8 --capacity 3811573760"
run gpt2_default deepum $G
run gpt2_discard_only deepum $G --config $R/no_drop_to_host.json
run bert_default deepum $B
run bert_discard_only deepum $B --config $R/no_drop_to_host.json
run gpt2_discard_only_2 deepum $G --config $R/no_drop_to_host.json
run gpt2_default_2 deepum $G
run gpt2_discard_only_t6 deepum $G --config $R/no_drop_to_host.json --timeline-step 6
echo "total $(( $(date +%s) - T0 )) s"
