#!/usr/bin/env bash
# call C: the host-mapping GPU tests with the updated expectation for tables waiting to be mapped; then the
# MoE's first four steps at 0.75 (none once, um and cold deepum twice each in alternation).
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout 400 python3 -m pytest -q -p no:cacheprovider -s tests/test_runtime_gpu.py -k "host_map or embedding" > $R/host_map_tests.log 2>&1
echo "host-map tests: $(tail -1 $R/host_map_tests.log) at $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout 330 python3 bench/early_steps.py --out $R/early_moe_075 --footprint-from bench/results/sweep_sizes \
  --workloads moe --budget 0.75 --steps 4 --repeats 2 --timeout 100 --size "moe=--layers 12 --hidden 768 --heads 12 --seq 512 --batch 2" \
  > $R/early_moe_075.log 2>&1
tail -3 $R/early_moe_075.log
echo "moe early steps done $(( $(date +%s) - T0 )) s"
tar -czf $OUT/c.tgz -C $OUT records; rm -rf $R
