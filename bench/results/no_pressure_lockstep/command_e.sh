#!/usr/bin/env bash
# call E: no pressure in lockstep on one CPU as call D, for the MoE and GPT-2 at their sweep sizes, five
# pairs each (GPT-2 again: call D left it undecided), 20 measured steps after 4 of warm-up. The records
# come back as one archive.
source bench/device_setup.sh
PYTHONPATH=. timeout $(( 585 - ($(date +%s) - T0) )) python3 bench/no_pressure.py --out $R/no_pressure --cpus 3 \
  --lockstep --workloads moe,gpt2 --steps 24 --warmup 4 --repeats 5 --timeout 150 \
  > $R/no_pressure.log 2>&1
grep -E "deepum / none|failed|timeout" $R/no_pressure.log; echo "total $(( $(date +%s) - T0 )) s"
mkdir -p $R/logs; cp $R/no_pressure/logs/*_full.log $R/logs/ 2>/dev/null; rm -rf $R/no_pressure/logs
tar -czf $OUT/e.tgz -C $OUT records; rm -rf $R
