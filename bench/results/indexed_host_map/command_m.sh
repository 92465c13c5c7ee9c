#!/usr/bin/env bash
# call M: are the two slower-than-um steps of the sweep systematic? GPT-2 24L at 0.75 and ResNet-152 at
# 0.5, um and deepum twice in alternation at the sweep's capacities, 4 steps each (the first ones).
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R/early
left() { echo $(( 585 - ($(date +%s) - T0) )); }
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
S=$PWD/bench/results/indexed_host_map/sweep
early() {  # $1 workload, $2 budget, $3 size flags
  CAP=$(python3 -c "import json;print(json.load(open('$S/$1_deepum_b$2.json'))['capacity_bytes'])")
  for K in 1 2; do for M in um deepum; do
    PYTHONPATH=. timeout $(left) python3 bench/train.py --workload $1 --mode $M -o $R/early/$1_${M}_b$2_run$K.json --steps 4 --warmup 1 $3 --reference $S/$1_none_full.json --capacity $CAP > $R/early/$1_${M}_$K.log 2>&1
    python3 -c "
import json; d=json.load(open('$R/early/$1_${M}_b$2_run$K.json'))
print('$1 $2 $M run $K', [round(x,3) for x in d['step_s']], d.get('parameter_sha256','')[:12])" || tail -3 $R/early/$1_${M}_$K.log
  done; done
}
early gpt2 0.75 "--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
early resnet152 0.50 "--batch 16 --image 224"
echo "total $(( $(date +%s) - T0 )) s"
tar -czf $OUT/m.tgz -C $OUT records; rm -rf $R
