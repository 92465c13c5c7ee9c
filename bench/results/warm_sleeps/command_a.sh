#!/usr/bin/env bash
# call A: a warm run that sleeps until pressure (this tree) against one awake from its first launch (the
# behaviour before, restored by experiment.patch's DEEPUM_X_WARM_AWAKE), at half the footprint (the
# sweep's sizes and capacities for 0.5): none, deepum cold writing the state, then four warm runs
# from copies of that state, awake and asleep in alternation, 6 steps each.
git apply bench/results/warm_sleeps/experiment.patch 2>/dev/null || patch -p1 < bench/results/warm_sleeps/experiment.patch || exit 1
source bench/device_setup.sh
left() { echo $(( ${LIMIT:-585} - ($(date +%s) - T0) )); }
run() {  # workload, tag, steps, capacity-or-dash, extra train.py flags...
  local W=$1 T=$2 S=$3 C=$4; shift 4
  local CAP=""; [ "$C" != "-" ] && CAP="--capacity $C"
  PYTHONPATH=. timeout 200 python3 bench/train.py --workload $W --mode $( [ "$C" = "-" ] && echo none || echo deepum ) \
    --steps $S --warmup 0 $CAP "$@" -o $R/${W}_$T.json > $R/${W}_$T.log 2>&1
  python3 -c "
import json; d=json.load(open('$R/${W}_$T.json')); s=d.get('stats') or {}; w=s.get('warm_start') or {}; p=(s.get('per_iteration') or [{}])[0]
print('$W $T', [round(x,3) for x in d['step_s']], d['parameter_sha256'][:12], w.get('state'), w.get('trial'), 'it0 launches', p.get('launches'), 'hook', round(p.get('hook_ns',0)/1e9,3))" || tail -3 $R/${W}_$T.log
}
for spec in "moe|5988417536|--layers 12 --hidden 768 --heads 12 --seq 512 --batch 2" \
            "bert-large|3792699392|--layers 24 --seq 128 --batch 8" \
            "gpt2|5961154560|--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4" \
            "resnet152|1954545664|--batch 16 --image 224"; do
  IFS='|' read W C F <<< "$spec"
  [ $(left) -lt 150 ] && { echo "no time for $W"; continue; }
  run $W none 4 - $F
  run $W cold 8 $C $F --warm-start $R/$W.state
  for i in 1 2; do
    cp $R/$W.state $R/$W.awake$i; cp $R/$W.state $R/$W.sleeps$i
    export DEEPUM_X_WARM_AWAKE=1; run $W warm-awake$i 6 $C $F --warm-start $R/$W.awake$i; unset DEEPUM_X_WARM_AWAKE
    run $W warm-sleeps$i 6 $C $F --warm-start $R/$W.sleeps$i
  done
  rm -f $R/$W.*
  echo "$W done at $(( $(date +%s) - T0 )) s"
done
tar -czf $OUT/records.tgz -C $OUT records; rm -rf $R
