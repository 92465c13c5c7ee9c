#!/usr/bin/env bash
# `command_a.sh gpt2 PAIRS` or `command_a.sh bert-large PAIRS`: next-use eviction with each block's
# state on one cache line and the uses of an iteration in one table (this tree) against the engine
# before it (c4b3598's next_use.hpp, the one file of driver_hooks/ it changed, carried packed as
# out/old_engine.tgz and built over a copy of the tree), each at half the footprint in lockstep against the in-memory step (bench/no_pressure.py
# --lockstep, the verdict against 2.5x with --tolerance 1.5). The two engines take turns two pairs at a
# time (--resume keeps the pairs made before), so a drift of the machine's speed over the call falls on
# both. bf16 with fused AdamW, 14 steps of which 4 warm-up. With PREVIOUS=FILE.tgz (an earlier call's
# records, carried), its pairs are kept and only the missing ones run.
source bench/device_setup.sh
[ -n "$PREVIOUS" ] && tar -xzf "$PREVIOUS" -C $R
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
W=$1; PAIRS=${2:-6}
case $W in
  gpt2) SIZE="--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --precision bf16"; CAP=6138363904 ;;
  bert-large) SIZE="--layers 24 --seq 128 --batch 8 --precision bf16"; CAP=3921674240 ;;
  *) echo "usage: command_a.sh gpt2|bert-large [pairs]"; exit 2 ;;
esac
OLD=/tmp/old_engine; rm -rf $OLD && cp -r . $OLD && tar -xzf out/old_engine.tgz -C $OLD
(cd $OLD && python3 setup.py -q build_ext --inplace && PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())") > $R/old_build.log 2>&1 || tail -20 $R/old_build.log
rm -f $R/old_build.log
echo "old engine built at $(( $(date +%s) - T0 )) s"
check() {  # $1 tree, $2 folder under $R, $3 pairs in all
  (cd $1 && PYTHONPATH=. python3 bench/no_pressure.py --out $R/$2 --workloads $W --size "$W=$SIZE" --capacity $W=$CAP \
    --lockstep --repeats $3 --steps 14 --warmup 4 --tolerance 1.5 --timeout 150 --resume 2>&1 | tail -1)
}
# The records are packed after each round, so that a call cut short by its time limit still returns
# the rounds it finished.
for pairs in $(seq 2 2 $PAIRS); do
  [ $(( $(date +%s) - T0 )) -gt 420 ] && { echo "stopped before $pairs pairs: time"; break; }
  check . next_use_lines $pairs
  check $OLD engine_before $pairs
  tar -czf $OUT/records.tgz -C $OUT records
done
echo "done at $(( $(date +%s) - T0 )) s"
tar -czf $OUT/records.tgz -C $OUT records && rm -rf $R
