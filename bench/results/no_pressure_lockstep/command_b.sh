#!/usr/bin/env bash
# call B: kernels on device memory and on managed memory whose pages are on the GPU (prefetched whole,
# or faulted in), timed in one process (bench/managed_kernel_probe.py); then no pressure in lockstep
# for the MoE at its sweep size, six pairs, as call A. The records come back as one archive.
source bench/device_setup.sh
PYTHONPATH=. python3 bench/managed_kernel_probe.py -o $R/managed_kernel_probe.json > $R/managed_kernel_probe.log 2>&1
cat $R/managed_kernel_probe.log | tail -5
PYTHONPATH=. timeout $(( 585 - ($(date +%s) - T0) )) python3 bench/no_pressure.py --out $R/no_pressure --cpus 2-9 \
  --lockstep --workloads moe --steps 24 --warmup 4 --repeats 6 --timeout 150 > $R/no_pressure.log 2>&1
grep -E "deepum / none|failed|timeout" $R/no_pressure.log; echo "total $(( $(date +%s) - T0 )) s"
mkdir -p $R/logs; cp $R/no_pressure/logs/*_full.log $R/logs/ 2>/dev/null; rm -rf $R/no_pressure/logs
tar -czf $OUT/b.tgz -C $OUT records; rm -rf $R
