#!/usr/bin/env bash
# call C: no pressure with the runs pinned to eight CPUs (--cpus 2-9): DLRM and GPT-2 at their sweep
# sizes, none and deepum in alternation, eight runs each, 20 measured steps after 4 of warm-up (the
# pair interval then sets the most extreme pair on each side aside). The records come back as one archive.
source bench/device_setup.sh
PYTHONPATH=. timeout $(( 585 - ($(date +%s) - T0) )) python3 bench/no_pressure.py --out $R/no_pressure --cpus 2-9 \
  --workloads dlrm,gpt2 --steps 24 --warmup 4 --repeats 8 --timeout 100 > $R/no_pressure.log 2>&1
grep -E "deepum / none" $R/no_pressure.log; echo "total $(( $(date +%s) - T0 )) s"
rm -rf $R/no_pressure/logs; tar -czf $OUT/c.tgz -C $OUT records; rm -rf $R
