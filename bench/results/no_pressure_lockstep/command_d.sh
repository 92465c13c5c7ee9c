#!/usr/bin/env bash
# call D: no pressure in lockstep as call A, every process pinned to one CPU (--cpus 3): the two runs of
# a pair, which take turns, then run on the same core. DLRM, BERT-Large, ResNet-152 and GPT-2 at their
# sweep sizes, five pairs each, 20 measured steps after 4 of warm-up. The records come back as one archive.
source bench/device_setup.sh
PYTHONPATH=. timeout $(( 585 - ($(date +%s) - T0) )) python3 bench/no_pressure.py --out $R/no_pressure --cpus 3 \
  --lockstep --workloads dlrm,bert-large,resnet152,gpt2 --steps 24 --warmup 4 --repeats 5 --timeout 150 \
  > $R/no_pressure.log 2>&1
grep -E "deepum / none|failed|timeout" $R/no_pressure.log; echo "total $(( $(date +%s) - T0 )) s"
mkdir -p $R/logs; cp $R/no_pressure/logs/*_full.log $R/logs/ 2>/dev/null; rm -rf $R/no_pressure/logs
tar -czf $OUT/d.tgz -C $OUT records; rm -rf $R
