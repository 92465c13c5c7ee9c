#!/usr/bin/env bash
# Where the hook's hand-over of moves spends its time, finer (bench/probes/submit_where.patch over
# bench/probes/submit_split.patch): the wait for the memory map's lock and the lookups under it, the
# thread's CPU time against the wall clock and its context switches inside the hand-over, the
# worker's lock, the parts' lookups and the pools' queues; the whole hook's thread CPU time. Then the
# same tree with bench/probes/hand_over_by_worker.patch (every command queues for the worker, which
# hands the move threads theirs) built in a copy, the two taking turns a lockstep pair at a time on
# the 24-layer GPT-2 in bf16 at half its footprint (bench/no_pressure.py --lockstep, 14 steps of which
# 4 warm-up). TLB-shootdown interrupts of all CPUs are counted over each pair. $1: pairs per tree at
# most (default 4); $2: seconds after which no new round starts (default 470).
git apply bench/probes/submit_split.patch && git apply bench/probes/submit_where.patch || exit 1
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
BY=/tmp/by_worker; rm -rf $BY && cp -r . $BY && (cd $BY && patch -p1 --fuzz=3 < bench/probes/hand_over_by_worker.patch) > /dev/null || exit 1
(cd $BY && python3 setup.py -q build_ext --inplace && PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())") > $R/by_build.log 2>&1 || tail -20 $R/by_build.log
rm -f $R/by_build.log
echo "second tree built at $(( $(date +%s) - T0 )) s"
GPT2="--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --precision bf16"; GPT2_CAP=6138363904
tlb() { awk '/TLB/ {s = 0; for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+$/) s += $i; print s}' /proc/interrupts; }
check() {  # $1 tree, $2 folder under $R, $3 pairs in all
  local before=$(tlb) start=$(date +%s.%N)
  (cd $1 && PYTHONPATH=. python3 bench/no_pressure.py --out $R/$2 --workloads gpt2 --size "gpt2=$GPT2" \
    --capacity gpt2=$GPT2_CAP --lockstep --repeats $3 --steps 14 --warmup 4 --tolerance 1.5 --timeout 150 \
    --resume 2>&1 | tail -1)
  echo "$2 pair $3: $(( $(tlb) - before )) TLB shootdowns in $(python3 -c "import time; print(round(time.time() - $start, 1))") s" | tee -a $R/tlb.txt
}
for pairs in $(seq 1 ${1:-4}); do
  [ $(( $(date +%s) - T0 )) -gt ${2:-470} ] && { echo "stopped before $pairs pairs: time"; break; }
  check . gpt2_split $pairs
  check $BY gpt2_by_worker $pairs
  tar -czf $OUT/records.tgz -C $OUT records
done
echo "done at $(( $(date +%s) - T0 )) s"
tar -czf $OUT/records.tgz -C $OUT records && rm -rf $R
