#!/usr/bin/env bash
# call E: the launch hook's reading of arguments with the memory map answering words outside the
# span of the live allocations without a search (2315b08) against the map before (its memory_map.hpp
# carried as out/old_scan/ and built in a copy): deepum awake without pressure, GPT-2 and BERT-Large
# in bf16 with fused AdamW, alternated; then the two torch.compile safety tests on this tree.
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
OLD=/tmp/old_scan; rm -rf $OLD && cp -r . $OLD && cp out/old_scan/memory_map.hpp $OLD/driver_hooks/
(cd $OLD && PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.load_torch_extension(n.online_engine())") > $R/old_build.log 2>&1 || tail -20 $R/old_build.log
rm -f $R/old_build.log
echo "old tree built at $(( $(date +%s) - T0 )) s"
run() {  # $1 tree, $2 name, rest: flags
  local tree=$1 name=$2; shift 2
  (cd $tree && PYTHONPATH=. timeout 120 python3 bench/train.py --mode deepum --precision bf16 --steps 10 --warmup 4 -o $R/$name.json \
     --config bench/results/launching_thread_profile/awake_without_pressure.json "$@" > $R/$name.log 2>&1)
  python3 -c "
import json; d=json.load(open('$R/$name.json'))
print('$name', round(d['step_s_median'],4), d['parameter_sha256'][:12], 'enq', round(d['enqueue_s_median'],4), 'hook', round(d.get('hook_s_per_step') or 0,4),
      {k: round(v*1e3, 2) for k, v in (d.get('hook_split_s_per_step') or {}).items()})" 2>&1 | tail -1
}
G="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
B="--workload bert-large --layers 24 --seq 128 --batch 8"
for i in 1 2; do
  run . gpt2_new_$i $G
  run $OLD gpt2_old_$i $G
  run . bert_new_$i $B
  run $OLD bert_old_$i $B
done
echo "pairs done at $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout $(( 590 - ($(date +%s) - T0) )) python3 -m pytest -v -p no:cacheprovider -rs --timeout 280 --durations=5 \
  tests/test_safety_gpu.py -k "compiled" > $R/safety_compiled.log 2>&1
echo "compiled safety tests rc=$? at $(( $(date +%s) - T0 )) s"
grep -E "PASSED|FAILED|ERROR|SKIPPED|Timeout|passed|failed" $R/safety_compiled.log | tail -8
cd $OUT && tar -czf scan_and_compiled.tgz records && rm -rf records
