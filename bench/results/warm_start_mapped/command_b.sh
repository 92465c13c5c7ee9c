#!/usr/bin/env bash
# call B: the two-process warm start GPU test; ResNet-152's first two steps at 0.5, um and deepum
# cold three times each in alternation; then warm starts at 0.75 as time allows.
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
left() { echo $(( 570 - ($(date +%s) - T0) )); }
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout $(left) python3 -m pytest -q -p no:cacheprovider -s tests/test_launcher_gpu.py > $R/test_launcher_gpu.log 2>&1
echo "launcher: $(tail -1 $R/test_launcher_gpu.log) at $(( $(date +%s) - T0 )) s"; grep -h "trials:" $R/test_launcher_gpu.log
mkdir -p $R/first_steps
for i in 1 2 3; do for M in um deepum; do
  PYTHONPATH=. timeout 120 python3 bench/train.py --workload resnet152 --mode $M --steps 2 --warmup 0 --batch 16 --image 224 \
    --capacity 1954545664 -o $R/first_steps/resnet152_${M}_$i.json > $R/first_steps/resnet152_${M}_$i.log 2>&1
  python3 -c "import json; d=json.load(open('$R/first_steps/resnet152_${M}_$i.json')); print('$M $i', [round(x,3) for x in d['step_s']], d['parameter_sha256'][:12])"
done; done
echo "first steps done $(( $(date +%s) - T0 )) s"
for W in gpt2 bert-large; do
  [ $(left) -lt 100 ] && { echo "no time for $W"; continue; }
  PYTHONPATH=. timeout $(left) python3 bench/warm_start_gpu.py --out $R/warm_$W --footprint-from bench/results/sweep_sizes \
    --workloads $W --steps 8 --timeout 200 --budget 0.75 \
    --size "gpt2=--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4" --size "bert-large=--layers 24 --seq 128 --batch 8" > $R/warm_$W.log 2>&1
  tail -2 $R/warm_$W.log
  for f in $R/warm_$W/*.json; do python3 -c "
import json; d=json.load(open('$f')); s=d.get('stats') or {}
'step_s' in d and print('$(basename $f)', [round(x,3) for x in d.get('step_s') or []], (d.get('parameter_sha256') or '')[:12], s.get('warm_start'))" 2>/dev/null; done
  echo "$W done $(( $(date +%s) - T0 )) s"
done
rm -f $R/warm_*/*.deepum-warm
tar -czf $OUT/b.tgz -C $OUT records; rm -rf $R
