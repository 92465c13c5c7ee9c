#!/usr/bin/env bash
# Runs on a tree with experiment.patch applied (git apply bench/results/no_pressure_device_memory/experiment.patch):
# the patch reads the DEEPUM_EXPERIMENT_* variables below; deepum itself has no such setting.
# call B: the managed-kernel probe with an advised buffer and 4 MiB copies; then no pressure in
# lockstep on one CPU: DLRM with segments up to 20 MiB in device memory, DLRM and GPT-2 with each
# populated segment advised to the GPU (preferred location and accessed-by).
source bench/device_setup.sh
python3 bench/managed_kernel_probe.py --gib 1 --rounds 20 -o $R/probe.json > $R/probe.log 2>&1; tail -12 $R/probe.log
run() {  # variant workload, the variant's environment before
  env "${@:3}" PYTHONPATH=. timeout $(( 590 - ($(date +%s) - T0) )) \
    python3 bench/no_pressure.py --out $R/$1_$2 --cpus 3 --lockstep --workloads $2 --steps 24 --warmup 4 \
    --repeats 5 --timeout 150 > $R/$1_$2.log 2>&1
  echo "$1 $2: $(grep -hE "deepum / none|failed|timeout" $R/$1_$2.log | tr '\n' ' ') at $(( $(date +%s) - T0 )) s"
  rm -rf $R/$1_$2/logs
}
run advised dlrm DEEPUM_EXPERIMENT_ADVISE_POPULATED=1
run mid dlrm DEEPUM_EXPERIMENT_DEVICE_SEGMENT_BYTES=20971520
run advised gpt2 DEEPUM_EXPERIMENT_ADVISE_POPULATED=1
tar -czf $OUT/b.tgz -C $OUT records; rm -rf $R
