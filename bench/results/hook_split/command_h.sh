#!/usr/bin/env bash
# call H: no pressure, side by side (none, then deepum without a budget), 12 steps with 2 of warm-up, the sweep's sizes
export DEEPUM_NO_OVERSUBSCRIBE=1
R=$OUT/records; mkdir -p $R/np
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
PYTHONPATH=. timeout 540 python3 bench/no_pressure.py --out $R/np --workloads gpt2,bert-large,resnet152,dlrm,moe --steps 12 --warmup 2 --timeout 90 \
  --size 'gpt2=--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4' --size 'bert-large=--layers 24 --seq 128 --batch 8' \
  --size 'moe=--layers 12 --hidden 768 --heads 12 --seq 512 --batch 2' > $R/np/run.log 2>&1
tail -12 $R/np/run.log
python3 -c "
import json; d=json.load(open('$R/np/no_pressure.json'))
for w in d.get('workloads', d.get('results', [])): print(w)
print('all within', d.get('all_within'))" 2>&1 | cut -c1-400
tar -czf $OUT/h.tgz -C $R np
