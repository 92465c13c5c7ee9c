#!/usr/bin/env bash
# call F (call E's machine, still warm): none for both workloads (call E passed them a budget, which
# none refuses), then GPT-2 again with the defaults and with eight threads in each pool.
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
python3 -c "from deepum.config import DeepUMConfig as C; C(eviction_threads=8, prefetch_threads=8, discard_threads=8).save('$R/all8.json')"
run() {  # $1 name, $2 mode, rest: flags
  local name=$1 mode=$2; shift 2
  PYTHONPATH=. timeout 150 python3 bench/train.py --mode $mode --steps 10 --warmup 4 -o $R/$name.json "$@" > $R/$name.log 2>&1
  python3 -c "
import json; d=json.load(open('$R/$name.json')); s=d.get('stats') or {}
print('$name', round(d.get('step_s_median'),4), [round(x,3) for x in d['step_s']], (d.get('parameter_sha256') or '')[:12],
      'err', s.get('cuda_errors'))" 2>&1 | tail -1
}
G="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
B="--workload bert-large --layers 24 --seq 128 --batch 8"
run gpt2_none none $G
run bert_none none $B
run gpt2_all8 deepum $G --capacity 6002049024 --config $R/all8.json
run gpt2_deepum deepum $G --capacity 6002049024
echo "total $(( $(date +%s) - T0 )) s"
