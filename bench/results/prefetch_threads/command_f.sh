#!/usr/bin/env bash
# call F: the two-thread safety case run again and again (four eviction threads, prefetch threads 0
# then 4, alternating) for at most 200 s; the first run still going after 30 s has every thread's
# Python and native stack written by py-spy (carried in .whl/), and the loop stops there.
source bench/device_setup.sh
pip install -q --no-index .whl/py_spy-*.whl > $R/pip.log 2>&1 || tail -3 $R/pip.log
export PYTHONPATH=. CUBLAS_WORKSPACE_CONFIG=:4096:8
n=0
while [ $(( $(date +%s) - T0 )) -lt 260 ]; do
  n=$((n + 1)); pf=$(( n % 2 == 1 ? 0 : 4 ))
  python3 tests/test_safety_gpu.py two_threads mode=deepum eviction_threads=4 prefetch_threads=$pf > $R/run_$n.log 2>&1 &
  pid=$! t=0
  while kill -0 $pid 2>/dev/null && [ $t -lt 30 ]; do sleep 1; t=$((t + 1)); done
  if kill -0 $pid 2>/dev/null; then
    echo "run $n (prefetch threads $pf): still running after 30 s"
    timeout 60 py-spy dump --native --pid $pid > $R/run_$n.pyspy 2>&1
    for task in /proc/$pid/task/*; do echo "$(basename $task) $(cat $task/comm) $(cat $task/wchan)"; done > $R/run_$n.wchan
    sleep 3; timeout 60 py-spy dump --native --pid $pid > $R/run_$n.pyspy2 2>&1
    kill -9 $pid; wait $pid; break
  fi
  wait $pid; echo "run $n (prefetch threads $pf) exit $? in $t s"
done
echo "done at $(( $(date +%s) - T0 )) s"
tar -czf $OUT/f.tgz -C $OUT records; rm -rf $R
