#!/usr/bin/env bash
# call E: ResNet-152 at 0.5, its first steps: um, deepum, deepum with confident_hits 16 and 32, twice in
# alternation, 4 steps each, at the sweep's capacity.
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R/early
left() { echo $(( 585 - ($(date +%s) - T0) )); }
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
S=$PWD/bench/results/indexed_host_map/sweep
P=$PWD/bench/results/portable_ids
CAP=$(python3 -c "import json;print(json.load(open('$S/resnet152_deepum_b0.50.json'))['capacity_bytes'])")
for K in 1 2; do for V in um deepum deepum:16 deepum:32; do
  M=${V%%:*}; C=${V#*:}; N=$M; EXTRA=""
  if [ "$C" != "$V" ]; then N=${M}_ch$C; EXTRA="--config $P/confident_$C.json"; fi
  PYTHONPATH=. timeout $(left) python3 bench/train.py --workload resnet152 --mode $M -o $R/early/resnet152_${N}_run$K.json --steps 4 --warmup 1 --batch 16 --image 224 --reference $S/resnet152_none_full.json --capacity $CAP $EXTRA > $R/early/${N}_$K.log 2>&1
  python3 -c "
import json; d=json.load(open('$R/early/resnet152_${N}_run$K.json'))
print('$N run $K', [round(x,3) for x in d['step_s']], d.get('parameter_sha256','')[:12])" || tail -3 $R/early/${N}_$K.log
done; done
echo "total $(( $(date +%s) - T0 )) s"
tar -czf $OUT/e.tgz -C $OUT records; rm -rf $R
