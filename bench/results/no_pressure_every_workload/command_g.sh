#!/usr/bin/env bash
# call G: GPT-2 (12 x 768) without pressure in lockstep on one CPU again, on the tree where a session on
# device memory installs no hook (undecided in call F): seven pairs, 20 measured steps after 4 of warm-up.
source bench/device_setup.sh
PYTHONPATH=. timeout 500 python3 bench/no_pressure.py --out $R/gpt2 --cpus 3 \
  --lockstep --workloads gpt2 --steps 24 --warmup 4 --repeats 7 --timeout 150 > $R/gpt2.log 2>&1
echo "gpt2: $(grep -hE "deepum / none|failed|timeout" $R/gpt2.log | tr '\n' ' ') at $(( $(date +%s) - T0 )) s"
rm -rf $R/gpt2/logs
tar -czf $OUT/g.tgz -C $OUT records; rm -rf $R
