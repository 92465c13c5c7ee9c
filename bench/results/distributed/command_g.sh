#!/usr/bin/env bash
# Two-GPU data-parallel check (DDP, FSDP) of the 24-layer GPT-2; `torchrun -m deepum run` on NCCL;
# the one-GPU gloo smoke run.
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/dist; mkdir -p $R
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" >> $R/build.log 2>&1
echo "built in $(( $(date +%s) - T0 )) s"
W="--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --steps 8 --warmup 3"
for P in ddp fsdp; do
  PYTHONPATH=. timeout 260 python3 bench/distributed_check.py --parallel $P --timeout 120 --out $R/$P -- $W > $R/$P.log 2>&1
  echo "$P rc=$? at $(( $(date +%s) - T0 )) s"; tail -4 $R/$P.log
done
M="python3 -m torch.distributed.run --standalone --nproc-per-node 2 -m deepum run"
for mode in none deepum; do
  PYTHONPATH=. timeout 90 $M --mode $mode --capacity 1GiB --stats-json $R/launch_$mode/s.json out/ddp_gpu.py 8 > $R/launch_$mode.log 2>&1
  echo "launch $mode rc=$?"; grep -E "digest|deepum run" $R/launch_$mode.log | head -8
done 2>/dev/null
if [ $(( $(date +%s) - T0 )) -lt 470 ]; then
  PYTHONPATH=. timeout 110 python3 bench/distributed_check.py --smoke --timeout 50 --out $R/smoke > $R/smoke.log 2>&1; echo "smoke rc=$?"; tail -3 $R/smoke.log
fi
for f in $R/ddp/distributed_check.json $R/fsdp/distributed_check.json $R/smoke/distributed_check.json; do echo "== $f"; python3 -c "
import json; s=json.load(open('$f'))
def walk(o, p=''):
    if isinstance(o, dict):
        for k, v in o.items(): walk(v, p + '/' + k)
    elif not isinstance(o, list): print(p, o)
walk(s)" 2>&1 | head -40; done
cd $OUT && tar czf dist.tgz dist && rm -rf dist
echo "total $(( $(date +%s) - T0 )) s"
