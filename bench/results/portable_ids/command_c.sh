#!/usr/bin/env bash
# call C: the GPU tests on this tree (launcher with the two-process warm start, safety, access patterns,
# runtime).
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
left() { echo $(( 585 - ($(date +%s) - T0) )); }
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
for T in test_launcher_gpu test_safety_gpu test_access_patterns_gpu test_runtime_gpu; do
  PYTHONPATH=. timeout $(left) python3 -m pytest -q -p no:cacheprovider -s tests/$T.py > $R/$T.log 2>&1
  echo "$T: $(tail -1 $R/$T.log) at $(( $(date +%s) - T0 )) s"
done
grep -h "trials:" $R/test_launcher_gpu.log
tar -czf $OUT/c.tgz -C $OUT records; rm -rf $R
