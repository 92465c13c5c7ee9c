#!/usr/bin/env bash
# call A: the GPU tests of a kind switch between sessions and of the engine asleep (device memory
# with the default limits, managed memory under a budget), then no pressure in lockstep on one CPU for
# BERT-Large and ResNet-152 at their sweep sizes: five pairs each, 20 measured steps after 4 of
# warm-up; deepum without a budget, so on device memory. Records are written as each workload ends.
source bench/device_setup.sh
timeout 170 python3 -m pytest -q -p no:cacheprovider tests/test_runtime_gpu.py \
  -k "kind_switch or sleeps_without_pressure" > $R/gpu_tests.log 2>&1
tail -3 $R/gpu_tests.log
for w in bert-large resnet152; do
  PYTHONPATH=. timeout $(( 580 - ($(date +%s) - T0) )) python3 bench/no_pressure.py --out $R/$w --cpus 3 \
    --lockstep --workloads $w --steps 24 --warmup 4 --repeats 5 --timeout 150 > $R/$w.log 2>&1
  echo "$w: $(grep -hE "deepum / none|failed|timeout" $R/$w.log | tr '\n' ' ') at $(( $(date +%s) - T0 )) s"
  rm -rf $R/$w/logs
done
tar -czf $OUT/a.tgz -C $OUT records; rm -rf $R
