#!/usr/bin/env bash
# call A: warm starts at 0.5 with the learned state's mapped blocks (format version 4): GPT-2 24L,
# BERT-Large 24L, ResNet-152, then DLRM and the MoE as time allows.
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
left() { echo $(( 585 - ($(date +%s) - T0) )); }
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
nvidia-smi --query-gpu=name,memory.used,memory.total,driver_version --format=csv > $R/gpu.txt
for W in gpt2 bert-large resnet152 dlrm moe; do
  [ $(left) -lt 90 ] && { echo "no time for $W"; continue; }
  PYTHONPATH=. timeout $(left) python3 bench/warm_start_gpu.py --out $R/warm_$W --footprint-from bench/results/sweep_sizes \
    --workloads $W --steps 8 --timeout 200 \
    --size "gpt2=--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4" --size "bert-large=--layers 24 --seq 128 --batch 8" \
    --size "resnet152=--batch 16 --image 224" --size "dlrm=--tables 8 --rows 500000 --dim 64 --lookups 32 --batch 2048" \
    --size "moe=--layers 12 --hidden 768 --heads 12 --seq 512 --batch 2" > $R/warm_$W.log 2>&1
  tail -2 $R/warm_$W.log
  for f in $R/warm_$W/*.json; do python3 -c "
import json; d=json.load(open('$f')); s=d.get('stats') or {}
'step_s' in d and print('$(basename $f)', [round(x,3) for x in d.get('step_s') or []], (d.get('parameter_sha256') or '')[:12], s.get('warm_start'), [round(i.get('host_map_bytes',0)/1e9,2) for i in s.get('per_iteration') or []])" 2>/dev/null; done
  echo "$W done $(( $(date +%s) - T0 )) s"
done
rm -f $R/warm_*/*.deepum-warm
tar -czf $OUT/a.tgz -C $OUT records; rm -rf $R
