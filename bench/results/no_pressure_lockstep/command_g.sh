#!/usr/bin/env bash
# call G: no pressure in lockstep on one CPU as call D: GPT-2 again (call E stopped during it), five
# pairs, then DLRM again, seven pairs; 20 measured steps after 4 of warm-up. The records come back as
# one archive.
source bench/device_setup.sh
PYTHONPATH=. timeout $(( 585 - ($(date +%s) - T0) )) python3 bench/no_pressure.py --out $R/gpt2 --cpus 3 \
  --lockstep --workloads gpt2 --steps 24 --warmup 4 --repeats 5 --timeout 150 > $R/gpt2.log 2>&1
PYTHONPATH=. timeout $(( 585 - ($(date +%s) - T0) )) python3 bench/no_pressure.py --out $R/dlrm --cpus 3 \
  --lockstep --workloads dlrm --steps 24 --warmup 4 --repeats 7 --timeout 150 > $R/dlrm.log 2>&1
grep -hE "deepum / none|failed|timeout" $R/gpt2.log $R/dlrm.log; echo "total $(( $(date +%s) - T0 )) s"
rm -rf $R/gpt2/logs $R/dlrm/logs
tar -czf $OUT/g.tgz -C $OUT records; rm -rf $R
