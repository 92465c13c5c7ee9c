#!/usr/bin/env bash
# call H: evictions from 4 threads through the unified-memory driver (DeepUMConfig.eviction_threads)
# against the worker's stream through the CUDA driver, the dense transformers at half the footprint
# (the sweep's sizes and capacities for 0.5), 10 steps of which 5 warm-up, in alternation, beside
# none; the UVM-path bound from a migration probe of the same call.
source bench/device_setup.sh
echo '{"eviction_threads": 0}' > $R/stock.json
echo '{"eviction_threads": 4}' > $R/threads4.json
timeout 120 python3 bench/migration_probe.py --gib 2 -o $R/migration_probe.json > $R/migration_probe.log 2>&1
tail -2 $R/migration_probe.log
run() {  # workload, mode, tag, capacity, config, size flags...
  local w=$1 m=$2 t=$3 c=$4 cfg=$5; shift 5
  local cap=""
  [ "$c" != "-" ] && cap="--capacity $c --uvm-rates $R/migration_probe.json --reference $R/${w}_none.json --config $R/$cfg.json"
  PYTHONPATH=. timeout 150 python3 bench/train.py --workload $w --mode $m --steps 10 --warmup 5 $cap "$@" \
    -o $R/${w}_$t.json > $R/${w}_$t.log 2>&1
  python3 -c "
import json; d=json.load(open('$R/${w}_$t.json')); b=d.get('bounds') or {}; s=d.get('stats') or {}
print('$w $t', [round(x,3) for x in d['step_s']], 'median', round(d['step_s_median'],4), 'x uvm', round(b.get('step_over_uvm_path') or 0,3),
      'sha', d['parameter_sha256'][:12], 'hook', d.get('hook_s_per_step'), 'link', d.get('link_busy_s_per_step'),
      'h2d', d.get('h2d_bytes_per_step'), 'faults', d.get('faults_by_step'), 'evict', s.get('evict_bytes'), s.get('evict_calls'),
      'refused', s.get('direct_eviction_refusals'), 'wait_s', (s.get('direct_eviction_wait_ns') or 0) / 1e9,
      'evict_s', (s.get('worker_evict_ns') or 0) / 1e9, 'errors', s.get('cuda_errors'), s.get('last_cuda_error'))" \
    || tail -5 $R/${w}_$t.log
}
B="--layers 24 --seq 128 --batch 8"
G="--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
run bert-large none none - - $B
run gpt2 none none - - $G
for r in 1 2; do
  for c in threads4 stock; do
    run bert-large deepum ${c}_r$r 3792699392 $c $B
    [ $(( $(date +%s) - T0 )) -lt 480 ] && run gpt2 deepum ${c}_r$r 5961154560 $c $G
  done
  echo "round $r at $(( $(date +%s) - T0 )) s"
done
tar -czf $OUT/h.tgz -C $OUT records; rm -rf $R
