#!/usr/bin/env bash
# `command_a.sh PAIRS FRACTION...`: the 24-layer GPT-2 in bf16 with fused AdamW at half its footprint,
# in lockstep against the in-memory step (bench/no_pressure.py --lockstep, the verdict against 2.5x
# with --tolerance 1.5), with AdamW's moments of the first FRACTION of the parameters' bytes in plain
# GPU memory and deepum's budget smaller by the memory they take (train.py --device-moments; "0":
# the defaults, every moment in unified memory). The fractions take turns, two pairs each at a time,
# so that a drift of the machine's speed falls on all; 14 steps of which 4 warm-up.
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
PAIRS=$1; shift
SIZE="--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --precision bf16"; CAP=6138363904
check() {  # $1 fraction, $2 pairs in all
  local flags="$SIZE"; [ "$1" != 0 ] && flags="$SIZE --device-moments $1"
  PYTHONPATH=. python3 bench/no_pressure.py --out $R/moments_$1 --workloads gpt2 --size "gpt2=$flags" \
    --capacity gpt2=$CAP --lockstep --repeats $2 --steps 14 --warmup 4 --tolerance 1.5 --timeout 150 --resume 2>&1 | tail -1
}
# A short run first: a probe that cannot run says so at once.
PYTHONPATH=. python3 bench/train.py --workload gpt2 $SIZE --device-moments 1 --mode deepum --capacity $CAP --steps 3 \
  --warmup 1 -o $R/preflight.json > $R/preflight.log 2>&1 || { tail -20 $R/preflight.log; exit 1; }
python3 -c "import json; r = json.load(open('$R/preflight.json')); print('preflight', r['capacity_bytes'], r['device_moment_reserve_bytes'], r['device_moment_reserved_bytes'], r['step_s'])"
for pairs in $(seq 2 2 $PAIRS); do
  for f in "$@"; do
    [ $(( $(date +%s) - T0 )) -gt 480 ] && { echo "stopped before fraction $f, $pairs pairs: time"; break 2; }
    echo "fraction $f, $pairs pairs at $(( $(date +%s) - T0 )) s"; check $f $pairs
  done
  tar -czf $OUT/records.tgz -C $OUT records
done
echo "done at $(( $(date +%s) - T0 )) s"
tar -czf $OUT/records.tgz -C $OUT records && rm -rf $R
