#!/usr/bin/env bash
# call G: where the launch hook's time goes under pressure (stats() hook_<part>_ns), deepum at half the
# footprint with the capacities and in-memory references of bench/results/foreach_reader
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
F=bench/results/foreach_reader
run() {  # $1 workload, $2 the call its capacity comes from, $3 size flags
  local cap=$(python3 -c "import json;print(json.load(open('$F/$2/$1/$1_deepum_b0.50.json'))['capacity_bytes'])")
  PYTHONPATH=. timeout 150 python3 bench/train.py --workload $1 --mode deepum -o $R/$1_deepum_b0.50.json --steps 8 --warmup 3 $3 --reference $F/$2/$1/$1_none_full.json --capacity $cap > $R/$1.log 2>&1
  python3 -c "
import json; d=json.load(open('$R/$1_deepum_b0.50.json')); s=d['stats']
print('$1', d['status'], 'step', round(d['step_s_median'],3), 'hook', round(d['hook_s_per_step'],3), {k: round(v,3) for k,v in d['hook_split_s_per_step'].items()}, 'launches/step', s['per_iteration'][-1]['launches'], 'sha', d['parameter_sha256'][:12])"
}
run gpt2 call_d "--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
run bert-large call_d "--layers 24 --seq 128 --batch 8"
run moe call_d "--layers 12 --hidden 768 --heads 12 --seq 512 --batch 2"
run resnet152 call_c "--batch 16 --image 224"
echo "total $(( $(date +%s) - T0 )) s"
