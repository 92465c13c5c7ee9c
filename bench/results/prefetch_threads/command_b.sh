#!/usr/bin/env bash
# call B: four prefetch threads the default: tests/test_runtime_gpu.py whole; then the sweep's other
# workloads at half the footprint (the sweep's sizes and capacities), four prefetch threads against
# none, beside none (6 steps of which 2 warm-up).
source bench/device_setup.sh
timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_runtime_gpu.py --durations=5 > $R/gpu_tests_b.log 2>&1
echo "pytest exit $?"; tail -10 $R/gpu_tests_b.log
echo '{"prefetch_threads": 0}' > $R/pf0.json
echo '{"prefetch_threads": 4}' > $R/pf4.json
run() {  # workload, mode, tag, capacity, config, size flags...
  local w=$1 m=$2 t=$3 c=$4 cfg=$5; shift 5
  local cap=""
  [ "$c" != "-" ] && cap="--capacity $c --reference $R/${w}_none.json --config $R/$cfg.json"
  PYTHONPATH=. timeout 100 python3 bench/train.py --workload $w --mode $m --steps 6 --warmup 2 $cap "$@" \
    -o $R/${w}_$t.json > $R/${w}_$t.log 2>&1
  python3 -c "
import json; d=json.load(open('$R/${w}_$t.json')); s=d.get('stats') or {}
r=lambda x: round(x,4) if isinstance(x,float) else x
print('$w $t', [r(x) for x in d['step_s']], 'median', r(d['step_s_median']), 'sha', d['parameter_sha256'][:12], 'link', d.get('link_busy_s_per_step'),
      'hook', r(d.get('hook_s_per_step')), 'launch_driver', r(d.get('launch_driver_s_per_step')), 'faults', d.get('faults_by_step'),
      'refused', s.get('direct_prefetch_refusals'), s.get('direct_eviction_refusals'), 'errors', s.get('cuda_errors'), s.get('last_cuda_error'))" \
    || tail -5 $R/${w}_$t.log
}
run resnet152 none none - - --batch 16 --image 224
run dlrm none none - - --tables 8 --rows 500000 --dim 64 --lookups 32 --batch 2048
run moe none none - - --layers 12 --hidden 768 --heads 12 --seq 512 --batch 2
for c in pf4 pf0; do
  [ $(( $(date +%s) - T0 )) -lt 540 ] && run resnet152 deepum $c 1972371456 $c --batch 16 --image 224
  [ $(( $(date +%s) - T0 )) -lt 540 ] && run dlrm deepum $c 652214272 $c --tables 8 --rows 500000 --dim 64 --lookups 32 --batch 2048
  [ $(( $(date +%s) - T0 )) -lt 540 ] && run moe deepum $c 6350176256 $c --layers 12 --hidden 768 --heads 12 --seq 512 --batch 2
done
echo "done at $(( $(date +%s) - T0 )) s"
tar -czf $OUT/b.tgz -C $OUT records; rm -rf $R
