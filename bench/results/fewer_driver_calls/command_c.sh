#!/usr/bin/env bash
# call C (given inline on the machine of calls A and B, carrying out/old_engine.tgz): BERT-Large of 24
# layers in bf16 with fused AdamW at half its footprint, this tree against the engine before, as call A
# runs GPT-2, two pairs each at a time.
source bench/device_setup.sh
SIZE="--layers 24 --seq 128 --batch 8 --precision bf16"; CAP=3921674240
OLD=/tmp/old_engine; rm -rf $OLD && cp -r . $OLD && tar -xzf out/old_engine.tgz -C $OLD
(cd $OLD && python3 setup.py -q build_ext --inplace && PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())") > /dev/null 2>&1
echo "old built $(( $(date +%s) - T0 ))"
check() {  # $1 tree, $2 folder under $R, $3 pairs in all
  (cd $1 && PYTHONPATH=. python3 bench/no_pressure.py --out $R/$2 --workloads bert-large --size "bert-large=$SIZE" \
    --capacity bert-large=$CAP --lockstep --repeats $3 --steps 14 --warmup 4 --tolerance 1.5 --timeout 150 --resume 2>&1 | tail -1)
}
for pairs in 2 4; do
  [ $(( $(date +%s) - T0 )) -gt 300 ] && break
  check . fewer_driver_calls $pairs
  check $OLD engine_before $pairs
  tar -czf $OUT/records.tgz -C $OUT records
done
echo "done $(( $(date +%s) - T0 ))"
tar -czf $OUT/records.tgz -C $OUT records && rm -rf $R
