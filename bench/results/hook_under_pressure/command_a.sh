#!/usr/bin/env bash
# call A: where the launching thread's time goes under pressure. GPT-2 24L and BERT-Large 24L at half
# their footprints: one plain deepum run each (the hook's split in the record), then each under
# py-spy (native frames, 100 samples a second; the py-spy wheel carried in out/wheels).
export DEEPUM_NO_OVERSUBSCRIBE=1 PYTHONUNBUFFERED=1
T0=$(date +%s)
R=$OUT/records; rm -rf $R; mkdir -p $R
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
pip install -q out/wheels/py_spy-*.whl > $R/pip.log 2>&1 || tail -5 $R/pip.log
echo "built in $(( $(date +%s) - T0 )) s"
GPT2="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --capacity 5961154560"
BERT="--workload bert-large --layers 24 --seq 128 --batch 8 --capacity 3792699392"
python3 bench/train.py $GPT2 --mode deepum --steps 6 --warmup 3 -o $R/gpt2_deepum.json > $R/gpt2_deepum.log 2>&1 || tail -5 $R/gpt2_deepum.log
python3 bench/train.py $BERT --mode deepum --steps 6 --warmup 3 -o $R/bert_deepum.json > $R/bert_deepum.log 2>&1 || tail -5 $R/bert_deepum.log
echo "plain runs done $(( $(date +%s) - T0 )) s"
for w in gpt2 bert; do
  [ $w = gpt2 ] && A=$GPT2 || A=$BERT
  PYTHONPATH=. timeout 220 py-spy record --native --rate 100 --format raw -o $R/profile_$w.txt -- \
    python3 bench/train.py $A --mode deepum --steps 6 --warmup 3 -o $R/${w}_profiled.json > $R/profile_$w.log 2>&1 || tail -5 $R/profile_$w.log
  echo "$w profiled $(( $(date +%s) - T0 )) s"
done
python3 - <<'PY'
import json, os
R = os.environ["OUT"] + "/records"
for f in ["gpt2_deepum", "bert_deepum", "gpt2_profiled", "bert_profiled"]:
    try:
        r = json.load(open(f"{R}/{f}.json"))
        print(f, r["status"], r["step_s_median"], r["parameter_sha256"][:16], json.dumps(r.get("hook_split_s_per_step")),
              r.get("launch_driver_s_per_step"), r.get("enqueue_s_median"), r["bounds"].get("step_over_uvm_path"))
    except Exception as e:
        print(f, "no record", e)
PY
rm -f $R/build.log $R/prebuild.log $R/pip.log
gzip -q $R/profile_*.txt
tar -czf $OUT/a.tgz -C $OUT records; rm -rf $R
echo "total $(( $(date +%s) - T0 )) s"
