#!/usr/bin/env bash
# call B: GPT-2 24L's first two steps at 0.75 phase by phase (phase_probe.py), um and deepum three times
# each in alternation; then tests/test_runtime_gpu.py.
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
left() { echo $(( 570 - ($(date +%s) - T0) )); }
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
for i in 1 2 3; do for M in um deepum; do
  timeout 90 python3 bench/results/lazy_host_map/phase_probe.py --mode $M --capacity 8941731840 --workload gpt2 \
    --layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4 2>$R/phase_${M}_$i.err | tee -a $R/phases.jsonl
done; done
echo "phases done $(( $(date +%s) - T0 )) s"
PYTHONPATH=. timeout $(left) python3 -m pytest -q -p no:cacheprovider -s tests/test_runtime_gpu.py > $R/test_runtime_gpu.log 2>&1
echo "runtime: $(tail -1 $R/test_runtime_gpu.log) at $(( $(date +%s) - T0 )) s"
tar -czf $OUT/b.tgz -C $OUT records; rm -rf $R
