#!/usr/bin/env bash
# call B: where the launching threads wait when the steps overlap. deepum at half the footprint, GPT-2
# in bf16 with fused AdamW, steps overlapped (--overlap-steps) and separated by synchronizations; once
# step 4 is logged, py-spy samples every thread with native frames, idle ones included, for 3 s (py-spy
# pauses the process to sample: steps run slower meanwhile).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
profile() {  # $1 name, rest: flags
  local name=$1; shift
  PYTHONPATH=. timeout 150 python3 bench/train.py --mode deepum --precision bf16 --warmup 4 --steps 24 -o $R/$name.json "$@" > $R/$name.log 2>&1 &
  local pid=$!
  until grep -q "^step 4 " $R/$name.log 2>/dev/null || ! kill -0 $pid 2>/dev/null; do sleep 0.05; done
  local python=$(pgrep -P $pid | head -1)
  /tmp/site/bin/py-spy record --pid $python --duration 3 --rate 100 --native --threads --idle --format raw -o $R/$name.txt > $R/$name.pyspy.log 2>&1
  wait $pid
  python3 -c "
import json; d=json.load(open('$R/$name.json'))
print('$name', round(d['step_s_median'],4), [round(x,3) for x in d['step_s']], d['parameter_sha256'][:12], 'enq', round(d['enqueue_s_median'],4))"
  tail -1 $R/$name.pyspy.log
}
G="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --capacity 6138363904"
profile gpt2_overlapped $G --overlap-steps
profile gpt2_synced $G
echo "done at $(( $(date +%s) - T0 )) s"
