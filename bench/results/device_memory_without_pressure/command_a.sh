#!/usr/bin/env bash
# call A: the GPU tests of the allocator's two kinds of memory, then no pressure in lockstep on one CPU
# (as no_pressure_lockstep's call D) for DLRM, GPT-2, BERT-Large and ResNet-152 at their sweep sizes:
# five pairs each, 20 measured steps after 4 of warm-up. deepum without a budget has the default
# capacity, which its fuse cannot pass, so its segments come from device memory. The records come
# back as one archive.
source bench/device_setup.sh
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_runtime_gpu.py \
  -k "sleeps_without_pressure or um_puts_every or none_leaves or fuse_refuses" > $R/gpu_tests.log 2>&1
tail -3 $R/gpu_tests.log
for w in dlrm gpt2 bert-large resnet152; do
  PYTHONPATH=. timeout $(( 585 - ($(date +%s) - T0) )) python3 bench/no_pressure.py --out $R/$w --cpus 3 \
    --lockstep --workloads $w --steps 24 --warmup 4 --repeats 5 --timeout 150 > $R/$w.log 2>&1
  echo "$w: $(grep -hE "deepum / none|failed|timeout" $R/$w.log | tr '\n' ' ') at $(( $(date +%s) - T0 )) s"
  rm -rf $R/$w/logs
done
tar -czf $OUT/a.tgz -C $OUT records; rm -rf $R
