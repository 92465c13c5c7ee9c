#!/usr/bin/env bash
# call A: prefetches from four threads through the unified-memory driver (DeepUMConfig.prefetch_threads)
# beside four eviction threads, each pool writing its lane's shared progress word: the safety test of
# both, then BERT-Large 24L and GPT-2 24L at half the footprint, four prefetch threads against none,
# alternated, beside none and a migration probe for the UVM-path bound.
source bench/device_setup.sh
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_safety_gpu.py -k "move_threads" > $R/gpu_tests_a.log 2>&1
echo "pytest exit $?"; tail -4 $R/gpu_tests_a.log
timeout 60 python3 bench/migration_probe.py --gib 2 -o $R/migration_probe.json > $R/migration_probe.log 2>&1
echo '{"prefetch_threads": 0}' > $R/pf0.json
echo '{"prefetch_threads": 4}' > $R/pf4.json
run() {  # workload, mode, tag, capacity, config, size flags...
  local w=$1 m=$2 t=$3 c=$4 cfg=$5; shift 5
  local cap=""
  [ "$c" != "-" ] && cap="--capacity $c --uvm-rates $R/migration_probe.json --reference $R/${w}_none.json --config $R/$cfg.json"
  PYTHONPATH=. timeout 90 python3 bench/train.py --workload $w --mode $m --steps 10 --warmup 5 $cap "$@" \
    -o $R/${w}_$t.json > $R/${w}_$t.log 2>&1
  python3 -c "
import json; d=json.load(open('$R/${w}_$t.json')); s=d.get('stats') or {}; b=d.get('bounds') or {}
r=lambda x: round(x,3) if isinstance(x,float) else x
print('$w $t', [r(x) for x in d['step_s']], 'median', r(d['step_s_median']), 'x uvm', r(b.get('step_over_uvm_path')), 'sha', d['parameter_sha256'][:12],
      'link', d.get('link_busy_s_per_step'), 'hook', r(d.get('hook_s_per_step')), {k: r(v) for k, v in (d.get('hook_split_s_per_step') or {}).items()},
      'launch_driver', r(d.get('launch_driver_s_per_step')), 'gpu_busy', r(d.get('gpu_busy_s_per_step')), 'enqueue', r(d.get('enqueue_s_median')),
      'faults', d.get('faults_by_step'), 'refused', s.get('direct_prefetch_refusals'), s.get('direct_eviction_refusals'),
      'errors', s.get('cuda_errors'), s.get('last_cuda_error'))" \
    || tail -5 $R/${w}_$t.log
}
B="--layers 24 --seq 128 --batch 8"
G="--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
run bert-large none none - - $B
run gpt2 none none - - $G
for rep in 1 2; do
  for c in pf4 pf0; do
    [ $(( $(date +%s) - T0 )) -lt 480 ] && run bert-large deepum ${c}_$rep 3792699392 $c $B
    [ $(( $(date +%s) - T0 )) -lt 480 ] && run gpt2 deepum ${c}_$rep 5961154560 $c $G
  done
done
echo "done at $(( $(date +%s) - T0 )) s"
tar -czf $OUT/a.tgz -C $OUT records; rm -rf $R
