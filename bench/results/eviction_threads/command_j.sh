#!/usr/bin/env bash
# call J: the torch.compile safety tests and the runtime GPU tests with four eviction threads (the
# default); then the dense transformers at half the footprint with 2, 4 and 8 eviction threads and
# with none (the CUDA driver's stream), beside none, the bound from a migration probe of this call.
source bench/device_setup.sh
timeout 240 python3 -m pytest -q -p no:cacheprovider tests/test_safety_gpu.py -k "compiled" tests/test_runtime_gpu.py \
  --durations=5 > $OUT/gpu_tests_j.log 2>&1; echo "pytest exit $?"
tail -12 $OUT/gpu_tests_j.log
for n in 0 2 4 8; do echo "{\"eviction_threads\": $n}" > $R/threads$n.json; done
timeout 60 python3 bench/migration_probe.py --gib 2 -o $R/migration_probe.json > $R/migration_probe.log 2>&1
tail -2 $R/migration_probe.log
run() {  # workload, mode, tag, capacity, config, size flags...
  local w=$1 m=$2 t=$3 c=$4 cfg=$5; shift 5
  local cap=""
  [ "$c" != "-" ] && cap="--capacity $c --uvm-rates $R/migration_probe.json --reference $R/${w}_none.json --config $R/$cfg.json"
  PYTHONPATH=. timeout 100 python3 bench/train.py --workload $w --mode $m --steps 10 --warmup 5 $cap "$@" \
    -o $R/${w}_$t.json > $R/${w}_$t.log 2>&1
  python3 -c "
import json; d=json.load(open('$R/${w}_$t.json')); b=d.get('bounds') or {}; s=d.get('stats') or {}
print('$w $t', 'median', round(d['step_s_median'],4), 'x uvm', round(b.get('step_over_uvm_path') or 0,3),
      'sha', d['parameter_sha256'][:12], 'link', d.get('link_busy_s_per_step'), 'h2d', d.get('h2d_bytes_per_step'),
      'faults', d.get('faults_by_step'), 'refused', s.get('direct_eviction_refusals'), 'errors', s.get('cuda_errors'), s.get('last_cuda_error'))" \
    || tail -5 $R/${w}_$t.log
}
B="--layers 24 --seq 128 --batch 8"
G="--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
run bert-large none none - - $B
run gpt2 none none - - $G
for n in 4 0 8 2; do
  [ $(( $(date +%s) - T0 )) -lt 500 ] && run bert-large deepum threads$n 3792699392 threads$n $B
  [ $(( $(date +%s) - T0 )) -lt 500 ] && run gpt2 deepum threads$n 5961154560 threads$n $G
done
echo "done at $(( $(date +%s) - T0 )) s"
tar -czf $OUT/j.tgz -C $OUT records; rm -rf $R
