#!/usr/bin/env bash
# call A: where the launching threads' CPU goes, by native stack. Each run trains in the background;
# once its step 4 is logged, py-spy samples every thread of the process with native frames for a
# fixed time (py-spy pauses the process to sample: steps run slower meanwhile), and the host's TLB
# shootdown interrupts are counted over the same time. none and deepum, GPT-2 and BERT-Large in bf16
# with fused AdamW at half their footprints.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
tlb() { awk '/TLB/ {s=0; for (i=2; i<=NF; i++) if ($i ~ /^[0-9]+$/) s+=$i; print s}' /proc/interrupts; }
profile() {  # $1 name, $2 mode, $3 seconds sampled, rest: flags
  local name=$1 mode=$2 secs=$3; shift 3
  PYTHONPATH=. timeout 150 python3 bench/train.py --mode $mode --precision bf16 --warmup 4 -o $R/$name.json "$@" > $R/$name.log 2>&1 &
  local pid=$!
  until grep -q "^step 4 " $R/$name.log 2>/dev/null || ! kill -0 $pid 2>/dev/null; do sleep 0.05; done
  local python=$(pgrep -P $pid | head -1)  # the trainer itself, not timeout
  local t0=$(tlb) s0=$(date +%s.%N)
  /tmp/site/bin/py-spy record --pid $python --duration $secs --rate 100 --native --threads --format raw -o $R/$name.txt > $R/$name.pyspy.log 2>&1
  local t1=$(tlb) s1=$(date +%s.%N)
  wait $pid
  python3 -c "
import json; d=json.load(open('$R/$name.json'))
print('$name', round(d['step_s_median'],4), [round(x,3) for x in d['step_s']], d['parameter_sha256'][:12], 'tlb/s', round(($t1-$t0)/($s1-$s0)), 'window', round($s1-$s0,2))"
  tail -2 $R/$name.pyspy.log
}
G="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
B="--workload bert-large --layers 24 --seq 128 --batch 8"
profile gpt2_none none 3 $G --steps 60
profile gpt2_deepum deepum 4 $G --capacity 6138363904 --steps 30
profile bert_none none 3 $B --steps 60
profile bert_deepum deepum 4 $B --capacity 3921674240 --steps 30
echo "done at $(( $(date +%s) - T0 )) s"
cd $OUT && tar -czf profiles.tgz records && rm -rf records
