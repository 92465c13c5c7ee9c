#!/usr/bin/env bash
# Runs on a tree with experiment.patch applied (git apply bench/results/no_pressure_device_memory/experiment.patch):
# the patch reads the DEEPUM_EXPERIMENT_* variables below; deepum itself has no such setting.
# call A: no pressure in lockstep on one CPU (as no_pressure_lockstep's call D), deepum's segments in
# device memory up to a size (DEEPUM_EXPERIMENT_DEVICE_SEGMENT_BYTES: 0 none, 2 MiB the small pool's,
# 1 TiB all): DLRM at each, then GPT-2 with none and all. Five pairs each, 20 measured steps after 4.
source bench/device_setup.sh
run() {  # variant bytes workload
  DEEPUM_EXPERIMENT_DEVICE_SEGMENT_BYTES=$2 PYTHONPATH=. timeout $(( 590 - ($(date +%s) - T0) )) \
    python3 bench/no_pressure.py --out $R/$1_$3 --cpus 3 --lockstep --workloads $3 --steps 24 --warmup 4 \
    --repeats 5 --timeout 150 > $R/$1_$3.log 2>&1
  echo "$1 $3: $(grep -hE "deepum / none|failed|timeout" $R/$1_$3.log | tr '\n' ' ') at $(( $(date +%s) - T0 )) s"
  rm -rf $R/$1_$3/logs
}
run small 2097152 dlrm
run managed 0 dlrm
run all 1099511627776 dlrm
run all 1099511627776 gpt2
run managed 0 gpt2
tar -czf $OUT/a.tgz -C $OUT records; rm -rf $R
