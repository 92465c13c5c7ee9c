#!/usr/bin/env bash
# call A: the migration probe, then the dense transformers at half the footprint (the sweep's sizes
# and capacities for 0.5) with the UVM-path bound taken from that probe, measured in the same call:
# none, then deepum twice, 10 steps of which 5 warm-up. Then DLRM without pressure in lockstep on one
# CPU with longer runs (80 measured steps after 4 of warm-up) and eight pairs, in the time left.
source bench/device_setup.sh
timeout 120 python3 bench/migration_probe.py --gib 2 -o $R/migration_probe.json > $R/migration_probe.log 2>&1
tail -4 $R/migration_probe.log
run() {  # workload, mode, tag, capacity, size flags...
  W=$1; M=$2; T=$3; C=$4; shift 4
  CAP=""; REF=""; [ "$C" != "-" ] && CAP="--capacity $C --uvm-rates $R/migration_probe.json" && REF="--reference $R/${W}_none.json"
  PYTHONPATH=. timeout 150 python3 bench/train.py --workload $W --mode $M --steps 10 --warmup 5 $CAP $REF "$@" \
    -o $R/${W}_$T.json > $R/${W}_$T.log 2>&1
  python3 -c "
import json; d=json.load(open('$R/${W}_$T.json')); b=d.get('bounds') or {}
print('$W $T', [round(x,3) for x in d['step_s']], 'median', round(d['step_s_median'],4), 'x uvm', round(b.get('step_over_uvm_path',0),3), 'uvm', round(b.get('uvm_path_s',0),4), d['parameter_sha256'][:12], d.get('h2d_bytes_per_step'))" || tail -5 $R/${W}_$T.log
}
G="--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
run gpt2 none none - $G
run gpt2 deepum deepum 5961154560 $G
run gpt2 deepum deepum_r1 5961154560 $G
B="--layers 24 --seq 128 --batch 8"
run bert-large none none - $B
run bert-large deepum deepum 3792699392 $B
run bert-large deepum deepum_r1 3792699392 $B
echo "transformers done at $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout $(( 585 - ($(date +%s) - T0) )) python3 bench/no_pressure.py --out $R/dlrm --cpus 3 \
  --lockstep --workloads dlrm --steps 84 --warmup 4 --repeats 8 --timeout 100 > $R/dlrm.log 2>&1
echo "dlrm: $(grep -hE "deepum / none|failed|timeout" $R/dlrm.log | tr '\n' ' ') at $(( $(date +%s) - T0 )) s"
rm -rf $R/dlrm/logs
tar -czf $OUT/a.tgz -C $OUT records; rm -rf $R
