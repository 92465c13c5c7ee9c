#!/usr/bin/env bash
# call B: the tree with the discard threads' progress words kept alive for the memory map (the test
# that call A's first tree failed, first), then the 24-layer GPT-2 and BERT-Large at half their
# footprints, 10 steps of which 4 warm-up, on one machine: discard_threads 2 (default), 4, 0 (the
# worker's stream, through the CUDA driver) and deepum without invalidation.
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
PYTHONPATH=. timeout 120 python3 -m pytest -q -p no:cacheprovider --timeout 100 tests/test_safety_gpu.py \
  -k "device_tensors_made_after_disable" > $R/after_disable.log 2>&1; echo "after_disable rc=$?"; tail -1 $R/after_disable.log
for t in 0 4; do python3 -c "from deepum.config import DeepUMConfig; DeepUMConfig(discard_threads=$t).save('$R/discard_threads_$t.json')"; done
run() {  # $1 name, $2 mode, rest: flags
  local name=$1 mode=$2; shift 2
  PYTHONPATH=. timeout 120 python3 bench/train.py --mode $mode --steps 10 --warmup 4 -o $R/$name.json "$@" > $R/$name.log 2>&1
  python3 -c "
import json; d=json.load(open('$R/$name.json')); s=d.get('stats') or {}
print('$name', round(d.get('step_s_median'),4), [round(x,3) for x in d['step_s']], (d.get('parameter_sha256') or '')[:12],
      'err', s.get('cuda_errors'), 'refused', s.get('direct_discard_refusals'), 'cancelled', s.get('discards_cancelled'), 'holds', s.get('allocation_holds_for_discard'))" 2>&1 | tail -1
}
G="--workload gpt2 --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --capacity 6002049024"
B="--workload bert-large --layers 24 --seq 128 --batch 8 --capacity 3811573760"
for w in G B; do
  n=$( [ $w = G ] && echo gpt2 || echo bert )
  run ${n}_threads2 deepum ${!w}
  run ${n}_threads4 deepum ${!w} --config $R/discard_threads_4.json
  run ${n}_stream deepum ${!w} --config $R/discard_threads_0.json
  run ${n}_no_invalidate deepum-no-invalidate ${!w}
done
echo "total $(( $(date +%s) - T0 )) s"
