#!/usr/bin/env bash
# call C (GPT-2): where the decision thread runs. With bench/probes/decision_thread_own_view.patch and
# bench/probes/decision_thread_on_a_cpu.patch applied (DEEPUM_DECISION_CPU pins the thread): three
# settings at half the footprint, each in lockstep against the in-memory step, taking turns a pair at a
# time: the launching thread deciding; the decision thread where the scheduler puts it; the decision
# thread alone on the last CPU with every other thread of both runs kept off that CPU's core (its SMT
# siblings too; no_pressure.py --cpus). bf16 with fused AdamW, 14 steps of which 4 warm-up.
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
lscpu -e > $R/cpus.txt
LAST=$(( $(nproc) - 1 ))
CORE=$(cat /sys/devices/system/cpu/cpu$LAST/topology/thread_siblings_list)
OTHERS=$(python3 -c "
import os; core=set()
for part in '$CORE'.split(','):
    a,_,b=part.partition('-'); core.update(range(int(a), int(b or a)+1))
print(','.join(str(c) for c in sorted(os.sched_getaffinity(0)) if c not in core))")
echo "decision CPU $LAST, its core $CORE, the rest $OTHERS" | tee $R/placement.txt
echo '{"decision_thread": false}' > $R/launching_thread_decides.json
SIZE="--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --precision bf16"
check() {  # $1 folder under $R, $2 pairs in all, rest: no_pressure.py flags
  local out=$R/$1 pairs=$2; shift 2
  PYTHONPATH=. python3 bench/no_pressure.py --out $out --workloads gpt2 --size "gpt2=$SIZE" --capacity gpt2=6138363904 \
    --lockstep --repeats $pairs --steps 14 --warmup 4 --tolerance 1.5 --timeout 150 --resume "$@" 2>&1 | tail -1
}
for pairs in 1 2 3 4; do
  [ $(( $(date +%s) - T0 )) -gt 440 ] && { echo "stopped before $pairs pairs: time"; break; }
  check launching_thread $pairs --deepum-config $R/launching_thread_decides.json
  check decision_thread $pairs
  DEEPUM_DECISION_CPU=$LAST check decision_thread_own_core $pairs --cpus $OTHERS
done
echo "done at $(( $(date +%s) - T0 )) s"
