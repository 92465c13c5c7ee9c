#!/usr/bin/env bash
# The MemPool dropped mid-session on GPU 0 (while the native build warms), then DDP with its buckets in
# device memory at equal memory (none, deepum) on both GPUs.
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/i; mkdir -p $R
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" >> $R/build.log 2>&1
CUDA_VISIBLE_DEVICES=0 PYTHONPATH=. timeout 100 python3 -m pytest -v -p no:cacheprovider -rs tests/test_safety_gpu.py -k "pool_dropped" > $R/pool.log 2>&1; echo "rc=$? at $(( $(date +%s) - T0 )) s" >> $R/pool.log
grep -E "PASSED|FAILED|ERROR|passed|failed|rc=" $R/pool.log | tail -4
W="--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --steps 8 --warmup 3"
PYTHONPATH=. timeout 170 python3 bench/distributed_check.py --parallel ddp --modes deepum --capacity 5393113088 --timeout 100 --out $R/ddp_device_buckets -- $W --bucket-memory device > $R/ddp_device_buckets.log 2>&1
echo "ddp device buckets rc=$? at $(( $(date +%s) - T0 )) s"
python3 -c "
import json; s=json.load(open('$R/ddp_device_buckets/distributed_check.json'))
for p, v in s['parallel'].items():
    for m, r in v['runs'].items(): print(p, m, r.get('status'), r.get('step_s_median'), r.get('bitwise_equal_to_none'), r.get('capacity_bytes'))"
grep -h "what()\|Error" $R/ddp_device_buckets/*.err 2>/dev/null | head -3
cd $OUT && tar czf i.tgz i && rm -rf i
echo "total $(( $(date +%s) - T0 )) s"
