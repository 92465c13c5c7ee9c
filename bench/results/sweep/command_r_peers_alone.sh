#!/usr/bin/env bash
# call 4: the peers of gpt2 and resnet152 again, alone on one GPU (call 3 ran two jobs on one host)
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R/peers_alone
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
git rev-parse --short HEAD > $R/rev.txt; nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
PYTHONPATH=. timeout 230 python3 bench/peers.py --out $R/peers_alone --workloads gpt2,resnet152 --steps 8 --warmup 2 --timeout 50 > $R/peers_alone/run.log 2>&1
tail -12 $R/peers_alone/run.log
tar -czf $OUT/r.tgz -C $OUT records
echo "total $(( $(date +%s) - T0 )) s"
