#!/usr/bin/env bash
# call A: the GPU test files not yet run on this tree (runtime, access patterns, launcher), then the
# 24-layer GPT-2 and BERT-Large at half their footprints: none, deepum (step 6's timeline captured)
# and deepum without invalidation, 8 steps of which 3 warm-up, side by side.
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
PYTHONPATH=. timeout 300 python3 -m pytest -q -p no:cacheprovider -rs --durations=5 tests/test_runtime_gpu.py \
  tests/test_access_patterns_gpu.py tests/test_launcher_gpu.py > $R/gpu_tests.log 2>&1
echo "tests rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $R/gpu_tests.log; tail -4 $R/gpu_tests.log
run() {  # $1 name, $2 mode, $3 capacity, rest: flags
  local name=$1 mode=$2 cap=$3; shift 3
  PYTHONPATH=. timeout 120 python3 bench/train.py --mode $mode ${cap:+--capacity $cap} --steps 8 --warmup 3 \
    -o $R/$name.json "$@" > $R/$name.log 2>&1
  python3 -c "import json; d=json.load(open('$R/$name.json')); s=d.get('stats') or {}; print('$name', d.get('step_s_median'), (d.get('parameter_sha256') or '')[:12], s.get('cuda_errors'))" 2>&1 | tail -1
}
G="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
B="--workload bert-large --layers 24 --seq 128 --batch 8"
run gpt2_none none "" $G
run gpt2_deepum deepum 6002049024 $G --timeline-step 6 --reference $R/gpt2_none.json
run gpt2_no_invalidate deepum-no-invalidate 6002049024 $G --reference $R/gpt2_none.json
run bert_none none "" $B
run bert_deepum deepum 3811573760 $B --timeline-step 6 --reference $R/bert_none.json
run bert_no_invalidate deepum-no-invalidate 3811573760 $B --reference $R/bert_none.json
echo "total $(( $(date +%s) - T0 )) s"
