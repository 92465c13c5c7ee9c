#!/usr/bin/env bash
# call L: the 24-layer GPT-2 at half its footprint under um and under deepum (four eviction threads,
# the default), 8 steps each, for the simulator's replay of the recorded trace to compare with; then
# BERT-Large 24L and GPT-2 24L at 0.5 with 4 eviction threads and with none, beside none, the bound
# from a migration probe of this call.
source bench/device_setup.sh
for n in 0 4; do echo "{\"eviction_threads\": $n}" > $R/threads$n.json; done
timeout 60 python3 bench/migration_probe.py --gib 2 -o $R/migration_probe.json > $R/migration_probe.log 2>&1
tail -2 $R/migration_probe.log
run() {  # workload, mode, tag, capacity, config, steps, size flags...
  local w=$1 m=$2 t=$3 c=$4 cfg=$5 steps=$6; shift 6
  local cap=""
  [ "$c" != "-" ] && cap="--capacity $c --uvm-rates $R/migration_probe.json --reference $R/${w}_none.json"
  [ "$cfg" != "-" ] && cap="$cap --config $R/$cfg.json"
  PYTHONPATH=. timeout 150 python3 bench/train.py --workload $w --mode $m --steps $steps --warmup $(( steps == 8 ? 3 : 5 )) $cap "$@" \
    -o $R/${w}_$t.json > $R/${w}_$t.log 2>&1
  python3 -c "
import json, statistics; d=json.load(open('$R/${w}_$t.json')); b=d.get('bounds') or {}; s=d.get('stats') or {}
print('$w $t', [round(x,3) for x in d['step_s']], 'median', round(d['step_s_median'],4), 'steps 4-8', round(statistics.median(d['step_s'][3:8]),4),
      'x uvm', round(b.get('step_over_uvm_path') or 0,3), 'sha', d['parameter_sha256'][:12], 'link', d.get('link_busy_s_per_step'),
      'faults', d.get('faults_by_step'), 'refused', s.get('direct_eviction_refusals'), 'errors', s.get('cuda_errors'), s.get('last_cuda_error'))" \
    || tail -5 $R/${w}_$t.log
}
B="--layers 24 --seq 128 --batch 8"
G="--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
run gpt2 none none - - 8 $G
run gpt2 um um 5961154560 - 8 $G
run gpt2 deepum default 5961154560 - 8 $G
run bert-large none none - - 10 $B
for n in 4 0; do
  [ $(( $(date +%s) - T0 )) -lt 480 ] && run bert-large deepum threads$n 3792699392 threads$n 10 $B
  [ $(( $(date +%s) - T0 )) -lt 480 ] && run gpt2 deepum threads$n 5961154560 threads$n 10 $G
done
echo "done at $(( $(date +%s) - T0 )) s"
tar -czf $OUT/l.tgz -C $OUT records; rm -rf $R
