#!/usr/bin/env bash
# call B: this tree (the managed segments in a flat table, driver_hooks/segment_table.hpp) against
# the engine of e306fdd (the segments in ordered maps; its driver_hooks/ and the build list of its
# deepum/runtime/native_build.py, carried packed as
# out/old_engine.tgz and built over a copy of the tree), on the 24-layer GPT-2 and BERT-Large in bf16
# with fused AdamW at half their footprints, each run in lockstep against the in-memory step
# (bench/no_pressure.py --lockstep --tolerance 1.5, 14 steps of which 4 warm-up), the engines taking
# turns a pair at a time while the call's time lasts. $1: pairs per engine and model at most
# (default 3); $2: seconds after which no new round starts (default 420).
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
OLD=/tmp/old_engine; rm -rf $OLD && cp -r . $OLD && rm -rf $OLD/driver_hooks && tar -xzf out/old_engine.tgz -C $OLD
(cd $OLD && python3 setup.py -q build_ext --inplace && PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())") > $R/old_build.log 2>&1 || tail -20 $R/old_build.log
rm -f $R/old_build.log
echo "old engine built at $(( $(date +%s) - T0 )) s"
GPT2="--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --precision bf16"; GPT2_CAP=6138363904
BERT="--layers 24 --seq 128 --batch 8 --precision bf16"; BERT_CAP=3921674240
check() {  # $1 tree, $2 folder under $R, $3 workload, $4 size, $5 capacity, $6 pairs in all
  (cd $1 && PYTHONPATH=. python3 bench/no_pressure.py --out $R/$2 --workloads $3 --size "$3=$4" --capacity $3=$5 \
    --lockstep --repeats $6 --steps 14 --warmup 4 --tolerance 1.5 --timeout 150 --resume 2>&1 | tail -1)
}
for pairs in $(seq 1 ${1:-3}); do
  [ $(( $(date +%s) - T0 )) -gt ${2:-420} ] && { echo "stopped before $pairs pairs: time"; break; }
  check . gpt2_this_tree gpt2 "$GPT2" $GPT2_CAP $pairs
  check $OLD gpt2_engine_before gpt2 "$GPT2" $GPT2_CAP $pairs
  check . bert_this_tree bert-large "$BERT" $BERT_CAP $pairs
  check $OLD bert_engine_before bert-large "$BERT" $BERT_CAP $pairs
  tar -czf $OUT/records.tgz -C $OUT records
done
echo "done at $(( $(date +%s) - T0 )) s"
tar -czf $OUT/records.tgz -C $OUT records && rm -rf $R
