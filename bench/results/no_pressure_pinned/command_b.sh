#!/usr/bin/env bash
# call B: no pressure with the runs pinned to eight CPUs (--cpus 2-9): ResNet-152, GPT-2 and the MoE
# at their sweep sizes, none and deepum in alternation, four runs each, 20 measured steps after 4 of
# warm-up. The records come back as one archive.
source bench/device_setup.sh
PYTHONPATH=. timeout $(( 585 - ($(date +%s) - T0) )) python3 bench/no_pressure.py --out $R/no_pressure --cpus 2-9 \
  --workloads resnet152,gpt2,moe --steps 24 --warmup 4 --repeats 4 --timeout 100 > $R/no_pressure.log 2>&1
grep -E "deepum / none" $R/no_pressure.log; echo "total $(( $(date +%s) - T0 )) s"
rm -rf $R/no_pressure/logs; tar -czf $OUT/b.tgz -C $OUT records; rm -rf $R
