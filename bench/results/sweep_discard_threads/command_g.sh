#!/usr/bin/env bash
# call G (the machine of calls E and F): which pool's eight threads move GPT-2 and BERT-Large: eight
# prefetch threads alone, eight discard threads alone; BERT-Large again with the defaults and eight in each.
source bench/device_setup.sh
python3 -c "
from deepum.config import DeepUMConfig as C
C(prefetch_threads=8).save('$R/prefetch8.json'); C(discard_threads=8).save('$R/discard8.json')
C(eviction_threads=8, prefetch_threads=8, discard_threads=8).save('$R/all8.json')"
run() {  # $1 name, $2 mode, rest: flags
  local name=$1 mode=$2; shift 2
  PYTHONPATH=. timeout 150 python3 bench/train.py --mode $mode --steps 10 --warmup 4 -o $R/$name.json "$@" > $R/$name.log 2>&1
  python3 -c "
import json; d=json.load(open('$R/$name.json')); s=d.get('stats') or {}
print('$name', round(d.get('step_s_median'),4), [round(x,3) for x in d['step_s']], (d.get('parameter_sha256') or '')[:12],
      'err', s.get('cuda_errors'))" 2>&1 | tail -1
}
G="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --capacity 6002049024"
B="--workload bert-large --layers 24 --seq 128 --batch 8 --capacity 3811573760"
run gpt2_prefetch8 deepum $G --config $R/prefetch8.json
run gpt2_discard8 deepum $G --config $R/discard8.json
run bert_prefetch8 deepum $B --config $R/prefetch8.json
run bert_discard8 deepum $B --config $R/discard8.json
run bert_deepum deepum $B
run bert_all8 deepum $B --config $R/all8.json
echo "total $(( $(date +%s) - T0 )) s"
