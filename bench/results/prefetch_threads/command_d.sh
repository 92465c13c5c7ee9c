#!/usr/bin/env bash
# call D: the two-thread safety case (a reader of freed tensors behind GPU sleeps on one stream, the
# budget pressed on another) run directly, eviction and prefetch threads 4/4 three times, then 4/0 and
# 0/4; a run still going after 100 s has its threads' kernel stacks and wait channels written out,
# and gdb's backtraces where gdb is installed, before it is killed.
source bench/device_setup.sh
export PYTHONPATH=. CUBLAS_WORKSPACE_CONFIG=:4096:8
one() {  # tag, eviction threads, prefetch threads
  python3 tests/test_safety_gpu.py two_threads mode=deepum eviction_threads=$2 prefetch_threads=$3 > $R/two_threads_$1.log 2>&1 &
  local pid=$! t=0
  while kill -0 $pid 2>/dev/null && [ $t -lt 100 ]; do sleep 1; t=$((t + 1)); done
  if kill -0 $pid 2>/dev/null; then
    echo "$1: still running after 100 s"
    for task in /proc/$pid/task/*; do
      echo "== $(basename $task) $(cat $task/comm) wchan=$(cat $task/wchan 2>/dev/null)"; cat $task/stack 2>/dev/null
    done > $R/two_threads_$1.stacks
    command -v gdb > /dev/null && timeout 60 gdb -p $pid -batch -ex "thread apply all bt 25" > $R/two_threads_$1.gdb 2>&1
    kill -9 $pid
  fi
  wait $pid; echo "$1 exit $?"; grep -o '"reader_exact": \[[^]]*\]\|"pressure_exact": [a-z]*\|"cuda_errors": [0-9]*\|"direct_[a-z_]*": [0-9]*' $R/two_threads_$1.log | tr '\n' ' '; echo
}
for rep in 1 2 3; do one ev4_pf4_$rep 4 4; done
one ev4_pf0 4 0
one ev0_pf4 0 4
echo "done at $(( $(date +%s) - T0 )) s"
tar -czf $OUT/d.tgz -C $OUT records; rm -rf $R
