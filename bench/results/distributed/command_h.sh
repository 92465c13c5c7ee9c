#!/usr/bin/env bash
# e on GPU 0 (record_stream reuse, empty_cache) beside the GPT-2 bounds check on GPU 1; then on both
# GPUs FSDP with the held frees released, and DDP with its buckets in device memory at equal memory.
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/h; mkdir -p $R
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" >> $R/build.log 2>&1
echo "built in $(( $(date +%s) - T0 )) s"
(CUDA_VISIBLE_DEVICES=0 PYTHONPATH=. timeout 240 python3 -m pytest -v -p no:cacheprovider -rs tests/test_safety_gpu.py -k "record_stream or empty_cache or graph or two_threads or reduce" > $R/safety_e.log 2>&1; echo "rc=$? at $(( $(date +%s) - T0 )) s" >> $R/safety_e.log) &
(CUDA_VISIBLE_DEVICES=1 PYTHONPATH=. timeout 260 python3 bench/gpu_check.py --fraction 0.5 --out $R/bounds_check -- --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --steps 12 --warmup 4 > $R/bounds_check.log 2>&1; echo "rc=$? at $(( $(date +%s) - T0 )) s" >> $R/bounds_check.log) &
wait
grep -E "PASSED|FAILED|ERROR|XFAIL|XPASS|passed|failed|rc=" $R/safety_e.log | tail -12
grep -E "speedup|over_uvm|over_pinned|overhead|rc=" $R/bounds_check.log | tail -8
W="--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --steps 8 --warmup 3"
PYTHONPATH=. timeout 200 python3 bench/distributed_check.py --parallel fsdp --modes deepum --timeout 100 --out $R/fsdp -- $W > $R/fsdp.log 2>&1
echo "fsdp rc=$? at $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout 150 python3 bench/distributed_check.py --parallel ddp --modes deepum --capacity 5393113088 --timeout 100 --out $R/ddp_device_buckets -- $W --bucket-memory device > $R/ddp_device_buckets.log 2>&1
echo "ddp device buckets rc=$? at $(( $(date +%s) - T0 )) s"
for f in $R/fsdp/distributed_check.json $R/ddp_device_buckets/distributed_check.json; do echo "== $f"; python3 -c "
import json; s=json.load(open('$f'))
for p, v in s['parallel'].items():
    for m, r in v['runs'].items(): print(p, m, r.get('status'), r.get('step_s_median'), r.get('bitwise_equal_to_none'), r.get('capacity_bytes'))" 2>&1 | tail -8; done
for f in $R/fsdp/fsdp_deepum*.json; do python3 -c "
import json; r=json.load(open('$f'))
for k in r['ranks']: s=k.get('stats',{}); print('$f'.split('/')[-1], k['rank'], s.get('managed_bytes_peak'), s.get('held_frees_releases'), s.get('kernel_prediction_hits'), s.get('kernel_prediction_misses'), k.get('gpu_page_faults'))" 2>&1 | tail -3; done
cd $OUT && tar czf h.tgz h && rm -rf h
echo "total $(( $(date +%s) - T0 )) s"
