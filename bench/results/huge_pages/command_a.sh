#!/usr/bin/env bash
# call A: the process's heap on transparent huge pages (glibc's tunable glibc.malloc.hugetlb=1: malloc
# advises the kernel to back its heap and its mapped chunks with 2 MiB pages) against 4 KiB pages, for
# `none` and for deepum at half the footprint, alternated; GPT-2 and BERT-Large in bf16 with fused
# AdamW. deepum runs record step 6's timeline (the launching threads' split). The machine's huge-page
# setting, glibc's version and the huge pages in use midway through each run are logged.
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
{ cat /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag; ldd --version | head -1; nproc; } > $R/machine.txt
run() {  # $1 name, $2 tunables ("" for none), $3 mode, rest: flags
  local name=$1 tunables=$2 mode=$3; shift 3
  GLIBC_TUNABLES=$tunables PYTHONPATH=. timeout 150 python3 bench/train.py --mode $mode --precision bf16 --steps 10 --warmup 4 -o $R/$name.json "$@" > $R/$name.log 2>&1 &
  local pid=$!
  sleep 15; echo "$name $(grep AnonHugePages /proc/meminfo)" >> $R/huge_pages_midway.txt
  wait $pid
  python3 -c "
import json; d=json.load(open('$R/$name.json')); b=d.get('timeline') or {}
print('$name', round(d['step_s_median'],4), d['parameter_sha256'][:12], 'enq', round(d['enqueue_s_median'],4), 'hook', round(d.get('hook_s_per_step') or 0,4),
      {k: round(v/1e6,1) for k, v in b.items() if k.startswith('thread_') or k in ('gpu_busy_ns','gpu_idle_ns','window_ns')})" 2>&1 | tail -1
}
HP=glibc.malloc.hugetlb=1
G="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
B="--workload bert-large --layers 24 --seq 128 --batch 8"
GC="--capacity 6138363904 --timeline-step 6"
BC="--capacity 3921674240 --timeline-step 6"
for i in 1 2; do
  run gpt2_none_4k_$i "" none $G
  run gpt2_none_huge_$i $HP none $G
  run gpt2_deepum_4k_$i "" deepum $G $GC
  run gpt2_deepum_huge_$i $HP deepum $G $GC
done
run bert_none_4k "" none $B
run bert_none_huge $HP none $B
run bert_deepum_4k "" deepum $B $BC
run bert_deepum_huge $HP deepum $B $BC
echo "done at $(( $(date +%s) - T0 )) s"
