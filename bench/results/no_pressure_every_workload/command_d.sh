#!/usr/bin/env bash
# call D: a session on device memory installs neither the launch hook nor the allocator hook and
# counts no iteration (the parts call C found costly). The runtime's GPU tests, then DLRM without
# pressure in lockstep on one CPU: eight pairs, 80 measured steps after 4 of warm-up.
source bench/device_setup.sh
timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_runtime_gpu.py > $R/gpu_tests.log 2>&1
tail -3 $R/gpu_tests.log; grep -E "^(FAILED|ERROR)" $R/gpu_tests.log | head
PYTHONPATH=. timeout $(( 590 - ($(date +%s) - T0) )) python3 bench/no_pressure.py --out $R/dlrm --cpus 3 \
  --lockstep --workloads dlrm --steps 84 --warmup 4 --repeats 8 --timeout 100 > $R/dlrm.log 2>&1
echo "dlrm: $(grep -hE "deepum / none|failed|timeout" $R/dlrm.log | tr '\n' ' ') at $(( $(date +%s) - T0 )) s"
rm -rf $R/dlrm/logs
tar -czf $OUT/d.tgz -C $OUT records; rm -rf $R
