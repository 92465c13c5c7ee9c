#!/usr/bin/env bash
# call A: no pressure, none and deepum of each pair started together and taking turns at their steps
# (--lockstep), pinned to eight CPUs (--cpus 2-9): DLRM, GPT-2, BERT-Large and ResNet-152 at their
# sweep sizes, six pairs each, 20 measured steps after 4 of warm-up. The records come back as one archive.
source bench/device_setup.sh
PYTHONPATH=. timeout $(( 585 - ($(date +%s) - T0) )) python3 bench/no_pressure.py --out $R/no_pressure --cpus 2-9 \
  --lockstep --workloads dlrm,gpt2,bert-large,resnet152 --steps 24 --warmup 4 --repeats 6 --timeout 120 \
  > $R/no_pressure.log 2>&1
grep -E "deepum / none|failed|timeout" $R/no_pressure.log; echo "total $(( $(date +%s) - T0 )) s"
mkdir -p $R/logs; cp $R/no_pressure/logs/*_full.log $R/logs/ 2>/dev/null; rm -rf $R/no_pressure/logs
tar -czf $OUT/a.tgz -C $OUT records; rm -rf $R
