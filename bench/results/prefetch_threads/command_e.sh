#!/usr/bin/env bash
# call E: where the two-thread safety case stops with four eviction threads (prefetch threads 0 and 4):
# py-spy (carried in .whl/) writes every thread's Python and native stack after 40 s, then the run is
# killed.
source bench/device_setup.sh
pip install -q --no-index .whl/py_spy-*.whl > $R/pip.log 2>&1 || tail -3 $R/pip.log
export PYTHONPATH=. CUBLAS_WORKSPACE_CONFIG=:4096:8
one() {  # tag, eviction threads, prefetch threads
  python3 tests/test_safety_gpu.py two_threads mode=deepum eviction_threads=$2 prefetch_threads=$3 > $R/two_threads_$1.log 2>&1 &
  local pid=$! t=0
  while kill -0 $pid 2>/dev/null && [ $t -lt 40 ]; do sleep 1; t=$((t + 1)); done
  if kill -0 $pid 2>/dev/null; then
    echo "$1: still running after 40 s"
    timeout 60 py-spy dump --native --pid $pid > $R/two_threads_$1.pyspy 2>&1
    sleep 5; timeout 60 py-spy dump --native --pid $pid > $R/two_threads_$1.pyspy2 2>&1
    kill -9 $pid
  fi
  wait $pid; echo "$1 exit $?"
}
one ev4_pf0 4 0
one ev4_pf4 4 4
echo "done at $(( $(date +%s) - T0 )) s"
tar -czf $OUT/e.tgz -C $OUT records; rm -rf $R
