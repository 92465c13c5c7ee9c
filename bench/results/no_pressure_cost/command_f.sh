#!/usr/bin/env bash
# call F: where the CPU goes in BERT-Large (12 layers) without a budget on the tree with the memory
# map's asleep mode: none and deepum asleep under py-spy (native frames), as in call D.
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; rm -rf $R; mkdir -p $R
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
pip install -q out/wheels/py_spy-*.whl > $R/pip.log 2>&1 || tail -5 $R/pip.log
echo "built in $(( $(date +%s) - T0 )) s"
for mode in none deepum; do
  PYTHONPATH=. timeout 200 py-spy record --native --rate 250 --format raw -o $R/profile_bert_$mode.txt -- \
    python3 bench/train.py --workload bert-large --mode $mode -o $R/bert_$mode.json --steps 60 --warmup 5 \
    --layers 12 --seq 128 --batch 8 > $R/profile_bert_$mode.log 2>&1 || tail -5 $R/profile_bert_$mode.log
  python3 -c "import json; r=json.load(open('$R/bert_$mode.json')); print('$mode', r['status'], r['step_s_median'], r['parameter_sha256'][:16])"
done
echo "total $(( $(date +%s) - T0 )) s"
rm -f $R/build.log $R/prebuild.log $R/pip.log
tar -czf $OUT/f.tgz -C $OUT records; rm -rf $R
