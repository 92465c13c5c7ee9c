#!/usr/bin/env bash
# call C: GPT-2 24L's first two steps at 0.75, um and deepum cold three times each in alternation;
# then warm starts at 0.75 for ResNet-152, DLRM and the MoE as time allows.
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
left() { echo $(( 450 - ($(date +%s) - T0) )); }
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
mkdir -p $R/first_steps
for i in 1 2 3; do for M in um deepum; do
  PYTHONPATH=. timeout 120 python3 bench/train.py --workload gpt2 --mode $M --steps 2 --warmup 0 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 \
    --capacity 8941731840 -o $R/first_steps/gpt2_${M}_$i.json > $R/first_steps/gpt2_${M}_$i.log 2>&1
  python3 -c "import json; d=json.load(open('$R/first_steps/gpt2_${M}_$i.json')); print('$M $i', [round(x,3) for x in d['step_s']], d['parameter_sha256'][:12], d.get('faults_by_step'))"
done; done
echo "first steps done $(( $(date +%s) - T0 )) s"
for W in resnet152 dlrm moe; do
  [ $(left) -lt 80 ] && { echo "no time for $W"; continue; }
  PYTHONPATH=. timeout $(left) python3 bench/warm_start_gpu.py --out $R/warm_$W --footprint-from bench/results/sweep_sizes \
    --workloads $W --steps 8 --timeout 150 --budget 0.75 \
    --size "resnet152=--batch 16 --image 224" --size "dlrm=--tables 8 --rows 500000 --dim 64 --lookups 32 --batch 2048" \
    --size "moe=--layers 12 --hidden 768 --heads 12 --seq 512 --batch 2" > $R/warm_$W.log 2>&1
  tail -2 $R/warm_$W.log
  for f in $R/warm_$W/*.json; do python3 -c "
import json; d=json.load(open('$f')); s=d.get('stats') or {}
'step_s' in d and print('$(basename $f)', [round(x,3) for x in d.get('step_s') or []], (d.get('parameter_sha256') or '')[:12], s.get('warm_start'))" 2>/dev/null; done
  echo "$W done $(( $(date +%s) - T0 )) s"
done
rm -f $R/warm_*/*.deepum-warm
tar -czf $OUT/c.tgz -C $OUT records; rm -rf $R
