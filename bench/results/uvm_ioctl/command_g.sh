#!/usr/bin/env bash
# call G: call F's tree again on the same machine, GPT-2 24L at 0.5, then BERT-Large once more. Every
# move of the worker through the unified-memory driver (discards and populations too: UVM_DISCARD,
# then UVM_MIGRATE), ordered on the CPU, every lane's progress in pinned host memory, published when
# handed over but for what follows a host-mapping command until it is done; the watchdog on. Direct
# then stock, one run each beside none.
source bench/device_setup.sh
echo '{"direct_migrations": false}' > $R/stock.json
echo '{"direct_migrations": true}' > $R/direct.json
run() {  # workload, mode, tag, capacity, config, limit, size flags...
  local w=$1 m=$2 t=$3 c=$4 cfg=$5 limit=$6; shift 6
  local cap=""
  [ "$c" != "-" ] && cap="--capacity $c --reference $R/${w}_none.json --config $R/$cfg.json"
  DEEPUM_X_WATCHDOG=1 PYTHONPATH=. timeout $limit python3 bench/train.py --workload $w --mode $m --steps 10 --warmup 5 $cap "$@" \
    -o $R/${w}_$t.json > $R/${w}_$t.log 2>&1
  python3 -c "
import json; d=json.load(open('$R/${w}_$t.json')); b=d.get('bounds') or {}; s=d.get('stats') or {}
print('$w $t', [round(x,3) for x in d['step_s']], 'median', round(d['step_s_median'],4), 'x uvm (calibration)', round(b.get('step_over_uvm_path') or 0,3),
      'sha', d['parameter_sha256'][:12], 'launch_driver', d.get('launch_driver_s_per_step'), 'hook', d.get('hook_s_per_step'),
      'link', d.get('link_busy_s_per_step'), 'h2d', d.get('h2d_bytes_per_step'), 'faults', d.get('faults_by_step'), 'waits', s.get('kernel_waits'), s.get('kernel_waits_unissued'),
      'direct', s.get('direct_migration_calls'), s.get('direct_migration_fallbacks'), 'discards', s.get('discard_calls'), s.get('populate_calls'), 'errors', s.get('cuda_errors'), s.get('last_cuda_error'))" \
    2>/dev/null || { echo "$w $t did not finish:"; grep -m 2 "watchdog" $R/${w}_$t.log; tail -3 $R/${w}_$t.log; }
}
B="--layers 24 --seq 128 --batch 8"
G="--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
run gpt2 none none - - 60 $G
run gpt2 deepum direct 5961154560 direct 80 $G
run gpt2 deepum stock 5961154560 stock 80 $G
run bert-large none none - - 60 $B
run bert-large deepum direct 3792699392 direct 80 $B
run bert-large deepum stock 3792699392 stock 60 $B
echo "done at $(( $(date +%s) - T0 )) s"
tar -czf $OUT/g.tgz -C $OUT records; rm -rf $R
