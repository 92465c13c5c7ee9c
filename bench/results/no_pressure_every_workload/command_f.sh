#!/usr/bin/env bash
# call F: GPT-2 (12 x 768) and ResNet-152 without pressure in lockstep on one CPU on the tree where a
# session on device memory installs no hook: five pairs each, 20 measured steps after 4 of warm-up.
source bench/device_setup.sh
for w in gpt2 resnet152; do
  PYTHONPATH=. timeout $(( 580 - ($(date +%s) - T0) )) python3 bench/no_pressure.py --out $R/$w --cpus 3 \
    --lockstep --workloads $w --steps 24 --warmup 4 --repeats 5 --timeout 150 > $R/$w.log 2>&1
  echo "$w: $(grep -hE "deepum / none|failed|timeout" $R/$w.log | tr '\n' ' ') at $(( $(date +%s) - T0 )) s"
  rm -rf $R/$w/logs
done
tar -czf $OUT/f.tgz -C $OUT records; rm -rf $R
