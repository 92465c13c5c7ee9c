#!/usr/bin/env bash
# call C: DLRM's first steps at 0.75 without a warm start, um and deepum in alternation (five runs each,
# 3 steps), after call B's single cold run took 0.617 s for its first step against um's 0.520 s.
source bench/device_setup.sh
PYTHONPATH=. timeout 560 python3 bench/early_steps.py --out $R/early_dlrm_075 --footprint-from bench/results/sweep_sizes \
  --workloads dlrm --budget 0.75 --steps 3 --repeats 5 --timeout 100 \
  --size "dlrm=--tables 8 --rows 500000 --dim 64 --lookups 32 --batch 2048" > $R/early_dlrm_075.log 2>&1
tail -4 $R/early_dlrm_075.log
tar -czf $OUT/records.tgz -C $OUT records; rm -rf $R
