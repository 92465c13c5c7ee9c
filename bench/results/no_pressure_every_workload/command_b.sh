#!/usr/bin/env bash
# call B: the GPU test of a kind switch between sessions, then no pressure in lockstep on one CPU for
# the MoE (8 experts, top-2) at its sweep size: five pairs, 20 measured steps after 4 of warm-up.
source bench/device_setup.sh
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_runtime_gpu.py \
  -k "other_kind" > $R/gpu_tests.log 2>&1
tail -3 $R/gpu_tests.log
for w in moe; do
  PYTHONPATH=. timeout $(( 585 - ($(date +%s) - T0) )) python3 bench/no_pressure.py --out $R/$w --cpus 3 \
    --lockstep --workloads $w --steps 24 --warmup 4 --repeats 5 --timeout 150 > $R/$w.log 2>&1
  echo "$w: $(grep -hE "deepum / none|failed|timeout" $R/$w.log | tr '\n' ' ') at $(( $(date +%s) - T0 )) s"
  rm -rf $R/$w/logs
done
tar -czf $OUT/b.tgz -C $OUT records; rm -rf $R
