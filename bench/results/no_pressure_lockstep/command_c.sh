#!/usr/bin/env bash
# call C: the managed-memory probe with the launching thread's time per call (bench/managed_kernel_probe.py),
# without and with CUPTI's unified-memory counters configured, twice each in alternation. The records
# come back as one archive.
source bench/device_setup.sh
for i in 1 2; do
  for cupti in "" "--cupti"; do
    name=managed_kernel_probe${cupti:+_cupti}_$i
    PYTHONPATH=. python3 bench/managed_kernel_probe.py $cupti -o $R/$name.json > $R/$name.log 2>&1
    echo "== $name"; tail -8 $R/$name.log
  done
done
echo "total $(( $(date +%s) - T0 )) s"
tar -czf $OUT/c.tgz -C $OUT records; rm -rf $R
