#!/usr/bin/env bash
# call E: the dense transformers at half the footprint in steady state on this tree: none, then deepum
# twice (GPT-2 24L) or once (BERT-Large 24L), 10 steps with 5 of warm-up, the sweep's capacities.
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R/steady
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
run() {  # workload, mode, tag, capacity, size flags...
  W=$1; M=$2; T=$3; C=$4; shift 4
  CAP=""; REF=""; [ "$C" != "-" ] && CAP="--capacity $C" && REF="--reference $R/steady/${W}_none.json"
  PYTHONPATH=. timeout 150 python3 bench/train.py --workload $W --mode $M --steps 10 --warmup 5 $CAP $REF "$@" \
    -o $R/steady/${W}_$T.json > $R/steady/${W}_$T.log 2>&1
  python3 -c "
import json; d=json.load(open('$R/steady/${W}_$T.json')); b=d.get('bounds') or {}
print('$W $T', [round(x,3) for x in d['step_s']], 'median', round(d['step_s_median'],4), 'x uvm', round(b.get('step_over_uvm_path',0),3), 'uvm', round(b.get('uvm_path_s',0),4), d['parameter_sha256'][:12], d.get('h2d_bytes_per_step'))"
}
G="--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
run gpt2 none none - $G
run gpt2 deepum deepum 5961154560 $G
run gpt2 deepum deepum_r1 5961154560 $G
B="--layers 24 --seq 128 --batch 8"
run bert-large none none - $B
run bert-large deepum deepum 3792699392 $B
echo "done $(( $(date +%s) - T0 )) s"
tar -czf $OUT/e.tgz -C $OUT records; rm -rf $R
