#!/usr/bin/env bash
# call G: the tree with the two fixes (pools take a command only behind the worker's earlier ones;
# discard events recycled, so an allocation never destroys one): the two-thread case run again and
# again for 150 s (four eviction threads, prefetch threads 0 and 4 alternating; py-spy on a run still
# going after 30 s); then the safety tests of side streams, two threads and the move threads; then
# BERT-Large 24L at 0.5 with the defaults beside none, if time is left.
source bench/device_setup.sh
pip install -q --no-index .whl/py_spy-*.whl > $R/pip.log 2>&1 || tail -3 $R/pip.log
export CUBLAS_WORKSPACE_CONFIG=:4096:8
n=0; T1=$(date +%s)
while [ $(( $(date +%s) - T1 )) -lt 150 ]; do
  n=$((n + 1)); pf=$(( n % 2 == 1 ? 0 : 4 ))
  PYTHONPATH=. python3 tests/test_safety_gpu.py two_threads mode=deepum eviction_threads=4 prefetch_threads=$pf > $R/run_$n.log 2>&1 &
  pid=$! t=0
  while kill -0 $pid 2>/dev/null && [ $t -lt 30 ]; do sleep 1; t=$((t + 1)); done
  if kill -0 $pid 2>/dev/null; then
    echo "run $n (prefetch threads $pf): still running after 30 s"
    timeout 60 py-spy dump --native --pid $pid > $R/run_$n.pyspy 2>&1
    kill -9 $pid; wait $pid; break
  fi
  wait $pid; rc=$?
  echo "run $n (prefetch threads $pf) exit $rc in $t s $(grep -o '"reader_exact": \[[^]]*\]' $R/run_$n.log | grep -c false) inexact"
done
timeout 240 python3 -m pytest -q -p no:cacheprovider tests/test_safety_gpu.py -k "side_stream or two_threads or move_threads" > $R/gpu_tests_g.log 2>&1
echo "pytest exit $?"; tail -3 $R/gpu_tests_g.log
if [ $(( $(date +%s) - T0 )) -lt 470 ]; then
  B="--layers 24 --seq 128 --batch 8"
  PYTHONPATH=. timeout 60 python3 bench/train.py --workload bert-large --mode none --steps 10 --warmup 5 $B -o $R/bert-large_none.json > $R/bert-large_none.log 2>&1
  PYTHONPATH=. timeout 80 python3 bench/train.py --workload bert-large --mode deepum --steps 10 --warmup 5 --capacity 3792699392 \
    --reference $R/bert-large_none.json $B -o $R/bert-large_default.json > $R/bert-large_default.log 2>&1
  python3 -c "
import json; n=json.load(open('$R/bert-large_none.json')); d=json.load(open('$R/bert-large_default.json')); s=d['stats']
print('bert-large none', round(n['step_s_median'],4), 'deepum', [round(x,3) for x in d['step_s']], 'median', round(d['step_s_median'],4),
      'equal', d['parameter_sha256']==n['parameter_sha256'], 'errors', s.get('cuda_errors'), 'hook', round(d.get('hook_s_per_step'),3))" || tail -3 $R/bert-large_default.log
fi
echo "done at $(( $(date +%s) - T0 )) s"
tar -czf $OUT/g.tgz -C $OUT records; rm -rf $R
