#!/usr/bin/env bash
# call 3: the peers at equal peak memory, two workloads per GPU
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R/peers_a $R/peers_b
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
git rev-parse --short HEAD > $R/rev.txt; nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
python3 -c "import torchao; print('torchao', torchao.__version__)" > $R/torchao.txt 2>&1
( CUDA_VISIBLE_DEVICES=1 PYTHONPATH=. timeout 440 python3 bench/peers.py --out $R/peers_b --workloads resnet152,dlrm --steps 8 --warmup 2 --timeout 60 > $R/peers_b/run.log 2>&1 ) &
( CUDA_VISIBLE_DEVICES=0 PYTHONPATH=. timeout 440 python3 bench/peers.py --out $R/peers_a --workloads gpt2,bert-large --steps 8 --warmup 2 --timeout 60 > $R/peers_a/run.log 2>&1 )
wait
tail -14 $R/peers_a/run.log; tail -14 $R/peers_b/run.log; cat $R/torchao.txt | tail -1
tar -czf $OUT/q.tgz -C $OUT records
echo "total $(( $(date +%s) - T0 )) s"
