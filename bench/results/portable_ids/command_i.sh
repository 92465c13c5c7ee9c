#!/usr/bin/env bash
# call I: host_map_uses 5 against the default 4 at 0.5 on the sweep workloads (AdamW zero-fills its
# moments in the first step: five uses), once each in alternation, 6 steps, the sweep's capacities.
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R/early
left() { echo $(( 585 - ($(date +%s) - T0) )); }
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
S=$PWD/bench/results/indexed_host_map/sweep
P=$PWD/bench/results/portable_ids
pair() {  # $1 workload, $2 size flags
  CAP=$(python3 -c "import json;print(json.load(open('$S/$1_deepum_b0.50.json'))['capacity_bytes'])")
  for K in 1; do for N in deepum deepum_hmu5; do
    EXTRA=""; [ $N = deepum_hmu5 ] && EXTRA="--config $P/host_map_uses_5.json"
    PYTHONPATH=. timeout $(left) python3 bench/train.py --workload $1 --mode deepum -o $R/early/$1_${N}_run$K.json --steps 6 --warmup 2 $2 --reference $S/$1_none_full.json --capacity $CAP $EXTRA > $R/early/$1_${N}_$K.log 2>&1
    python3 -c "
import json; d=json.load(open('$R/early/$1_${N}_run$K.json'))
print('$1 $N run $K', [round(x,3) for x in d['step_s']], d.get('parameter_sha256','')[:12], 'host-mapped GB', [round(i['host_map_bytes']/1e9,2) for i in d['stats']['per_iteration']])" || tail -3 $R/early/$1_${N}_$K.log
  done; done
}
pair gpt2 "--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
pair bert-large "--layers 24 --seq 128 --batch 8"
pair dlrm "--tables 8 --rows 500000 --dim 64 --lookups 32 --batch 2048"
pair resnet152 "--batch 16 --image 224"
pair moe "--layers 12 --hidden 768 --heads 12 --seq 512 --batch 2"
echo "total $(( $(date +%s) - T0 )) s"
tar -czf $OUT/i.tgz -C $OUT records; rm -rf $R
