#!/usr/bin/env bash
# call A: the engine that makes fewer driver calls on the launching threads (this tree: the work before
# a decision recorded as an event only where the worker serves one of its commands; an allocation not
# made to wait for a discard that has returned) against the engine before (ff2de46's driver_hooks/
# files that differ, carried packed as out/old_engine.tgz and built over a copy of the tree). First the
# tests this call can afford: the bench's --device-moments test that needs torch, the two
# torch.compile safety tests and the launcher's; then the 24-layer GPT-2 in bf16 with fused AdamW at
# half its footprint in lockstep against the in-memory step, the two engines taking turns two pairs
# at a time.
source bench/device_setup.sh
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
PYTHONPATH=. timeout 60 python3 -m pytest -q -p no:cacheprovider -rs tests/test_bench_cpu.py -k device_moments \
  > $R/test_bench_device_moments.log 2>&1
echo "tests/test_bench_cpu.py -k device_moments rc=$?: $(tail -1 $R/test_bench_device_moments.log)"
PYTHONPATH=. timeout 200 python3 -m pytest -q -p no:cacheprovider -rs --durations=3 tests/test_safety_gpu.py -k compiled \
  > $R/test_safety_gpu_compiled.log 2>&1
echo "tests/test_safety_gpu.py -k compiled rc=$? at $(( $(date +%s) - T0 )) s: $(tail -1 $R/test_safety_gpu_compiled.log)"
PYTHONPATH=. timeout 150 python3 -m pytest -q -p no:cacheprovider -rs --durations=3 tests/test_launcher_gpu.py \
  > $R/test_launcher_gpu.log 2>&1
echo "tests/test_launcher_gpu.py rc=$? at $(( $(date +%s) - T0 )) s: $(tail -1 $R/test_launcher_gpu.log)"
tar -czf $OUT/records.tgz -C $OUT records
SIZE="--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 --precision bf16"; CAP=6138363904
OLD=/tmp/old_engine; rm -rf $OLD && cp -r . $OLD && tar -xzf out/old_engine.tgz -C $OLD
(cd $OLD && python3 setup.py -q build_ext --inplace && PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())") > $R/old_build.log 2>&1 || tail -20 $R/old_build.log
rm -f $R/old_build.log
echo "old engine built at $(( $(date +%s) - T0 )) s"
check() {  # $1 tree, $2 folder under $R, $3 pairs in all
  (cd $1 && PYTHONPATH=. python3 bench/no_pressure.py --out $R/$2 --workloads gpt2 --size "gpt2=$SIZE" --capacity gpt2=$CAP \
    --lockstep --repeats $3 --steps 14 --warmup 4 --tolerance 1.5 --timeout 150 --resume 2>&1 | tail -1)
}
for pairs in $(seq 2 2 ${1:-4}); do
  [ $(( $(date +%s) - T0 )) -gt 440 ] && { echo "stopped before $pairs pairs: time"; break; }
  check . fewer_driver_calls $pairs
  check $OLD engine_before $pairs
  tar -czf $OUT/records.tgz -C $OUT records
done
echo "done at $(( $(date +%s) - T0 )) s"
tar -czf $OUT/records.tgz -C $OUT records && rm -rf $R
