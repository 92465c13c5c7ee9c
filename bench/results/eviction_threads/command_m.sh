#!/usr/bin/env bash
# call M: prefetches from four threads through the unified-memory driver (DeepUMConfig.prefetch_threads)
# beside four eviction threads, against prefetches on the worker's stream: the safety test of both,
# then BERT-Large 24L and GPT-2 24L at half the footprint, beside none.
source bench/device_setup.sh
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_safety_gpu.py -k "move_threads" > $OUT/gpu_tests_m.log 2>&1
echo "pytest exit $?"; tail -4 $OUT/gpu_tests_m.log
echo '{"eviction_threads": 4, "prefetch_threads": 0}' > $R/pf0.json
echo '{"eviction_threads": 4, "prefetch_threads": 4}' > $R/pf4.json
run() {  # workload, mode, tag, capacity, config, size flags...
  local w=$1 m=$2 t=$3 c=$4 cfg=$5; shift 5
  local cap=""
  [ "$c" != "-" ] && cap="--capacity $c --reference $R/${w}_none.json --config $R/$cfg.json"
  PYTHONPATH=. timeout 90 python3 bench/train.py --workload $w --mode $m --steps 10 --warmup 5 $cap "$@" \
    -o $R/${w}_$t.json > $R/${w}_$t.log 2>&1
  python3 -c "
import json; d=json.load(open('$R/${w}_$t.json')); s=d.get('stats') or {}
print('$w $t', [round(x,3) for x in d['step_s']], 'median', round(d['step_s_median'],4), 'sha', d['parameter_sha256'][:12],
      'link', d.get('link_busy_s_per_step'), 'hook', d.get('hook_s_per_step'), 'launch_driver', d.get('launch_driver_s_per_step'),
      'gpu_idle', d.get('gpu_idle_s_per_step'), 'h2d', d.get('h2d_bytes_per_step'), 'faults', d.get('faults_by_step'),
      'refused', s.get('direct_prefetch_refusals'), s.get('direct_eviction_refusals'), 'errors', s.get('cuda_errors'), s.get('last_cuda_error'))" \
    || tail -5 $R/${w}_$t.log
}
B="--layers 24 --seq 128 --batch 8"
G="--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
run bert-large none none - - $B
run gpt2 none none - - $G
for c in pf4 pf0; do
  [ $(( $(date +%s) - T0 )) -lt 400 ] && run bert-large deepum $c 3792699392 $c $B
  [ $(( $(date +%s) - T0 )) -lt 400 ] && run gpt2 deepum $c 5961154560 $c $G
done
echo "done at $(( $(date +%s) - T0 )) s"
tar -czf $OUT/m.tgz -C $OUT records; rm -rf $R
