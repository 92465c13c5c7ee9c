#!/usr/bin/env bash
# call F: the managed-memory probe again (bench/managed_kernel_probe.py), now also timing the copies
# that wait for the GPU (item, to_host, from_host), without and with CUPTI's unified-memory counters.
# The records come back as one archive.
source bench/device_setup.sh
for cupti in "" "--cupti"; do
  name=managed_kernel_probe${cupti:+_cupti}
  PYTHONPATH=. python3 bench/managed_kernel_probe.py $cupti --rounds 20 -o $R/$name.json > $R/$name.log 2>&1
  echo "== $name"; tail -11 $R/$name.log
done
echo "total $(( $(date +%s) - T0 )) s"
tar -czf $OUT/f.tgz -C $OUT records; rm -rf $R
