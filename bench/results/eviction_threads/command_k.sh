#!/usr/bin/env bash
# call K: the runtime GPU tests with four eviction threads (the default); then the sweep's other
# workloads at half the footprint (the sweep's sizes and capacities) with 4 eviction threads and with
# none (the CUDA driver's stream), beside none.
source bench/device_setup.sh
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_runtime_gpu.py --durations=5 > $OUT/gpu_tests_k.log 2>&1
echo "pytest exit $?"; tail -10 $OUT/gpu_tests_k.log
for n in 0 4; do echo "{\"eviction_threads\": $n}" > $R/threads$n.json; done
run() {  # workload, mode, tag, capacity, config, size flags...
  local w=$1 m=$2 t=$3 c=$4 cfg=$5; shift 5
  local cap=""
  [ "$c" != "-" ] && cap="--capacity $c --reference $R/${w}_none.json --config $R/$cfg.json"
  PYTHONPATH=. timeout 100 python3 bench/train.py --workload $w --mode $m --steps 6 --warmup 2 $cap "$@" \
    -o $R/${w}_$t.json > $R/${w}_$t.log 2>&1
  python3 -c "
import json; d=json.load(open('$R/${w}_$t.json')); s=d.get('stats') or {}
print('$w $t', 'median', round(d['step_s_median'],4), 'sha', d['parameter_sha256'][:12], 'link', d.get('link_busy_s_per_step'),
      'h2d', d.get('h2d_bytes_per_step'), 'faults', d.get('faults_by_step'), 'refused', s.get('direct_eviction_refusals'),
      'errors', s.get('cuda_errors'), s.get('last_cuda_error'))" || tail -5 $R/${w}_$t.log
}
RN="--batch 16 --image 224"
DL="--tables 8 --rows 500000 --dim 64 --lookups 32 --batch 2048"
MO="--layers 12 --hidden 768 --heads 12 --seq 512 --batch 2"
run resnet152 none none - - $RN
run dlrm none none - - $DL
run moe none none - - $MO
for n in 4 0; do
  [ $(( $(date +%s) - T0 )) -lt 480 ] && run resnet152 deepum threads$n 1972371456 threads$n $RN
  [ $(( $(date +%s) - T0 )) -lt 480 ] && run dlrm deepum threads$n 652214272 threads$n $DL
  [ $(( $(date +%s) - T0 )) -lt 480 ] && run moe deepum threads$n 6350176256 threads$n $MO
done
echo "done at $(( $(date +%s) - T0 )) s"
tar -czf $OUT/k.tgz -C $OUT records; rm -rf $R
