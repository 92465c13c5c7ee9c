#!/usr/bin/env bash
# call D: GPT-2 24L's first two steps at 0.75 again, deepum cold first in each pair this time; then
# tests/test_runtime_gpu.py as time allows.
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
left() { echo $(( 420 - ($(date +%s) - T0) )); }
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
mkdir -p $R/first_steps
for i in 1 2; do for M in deepum um; do
  PYTHONPATH=. timeout 120 python3 bench/train.py --workload gpt2 --mode $M --steps 2 --warmup 0 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 \
    --capacity 8941731840 -o $R/first_steps/gpt2_${M}_$i.json > $R/first_steps/gpt2_${M}_$i.log 2>&1
  python3 -c "import json; d=json.load(open('$R/first_steps/gpt2_${M}_$i.json')); print('$M $i', [round(x,3) for x in d['step_s']], d['parameter_sha256'][:12], d.get('faults_by_step'))"
done; done
echo "first steps done $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout $(left) python3 -m pytest -q -p no:cacheprovider -s tests/test_runtime_gpu.py > $R/test_runtime_gpu.log 2>&1
echo "runtime: $(tail -1 $R/test_runtime_gpu.log) at $(( $(date +%s) - T0 )) s"
tar -czf $OUT/d.tgz -C $OUT records; rm -rf $R
