#!/usr/bin/env bash
# call B: the session's final tree on the GPU: its native parts built, tests/test_access_patterns_gpu.py,
# and the 24-layer GPT-2 in bf16 with fused AdamW, `none` and deepum at half its footprint, once each
# (bitwise equality).
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
python3 -m pytest -q -p no:cacheprovider tests/test_access_patterns_gpu.py > $R/access_patterns.log 2>&1; tail -1 $R/access_patterns.log
G="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --precision bf16 --steps 10 --warmup 4"
for mode in none deepum; do
  capacity=(); [ $mode = deepum ] && capacity=(--capacity 6138363904)
  PYTHONPATH=. timeout 150 python3 bench/train.py $G --mode $mode "${capacity[@]}" -o $R/gpt2_$mode.json > $R/gpt2_$mode.log 2>&1
  python3 -c "import json; d=json.load(open('$R/gpt2_$mode.json')); print('$mode', round(d['step_s_median'],4), d['parameter_sha256'][:12], (d.get('stats') or {}).get('cuda_errors'))"
done
echo "done at $(( $(date +%s) - T0 )) s"
