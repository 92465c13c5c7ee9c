# Sourced by command_b.sh .. command_d.sh: builds the tree and defines sweep() (run_all.py at 0.75 and 0.5,
# none, um and deepum, 8 steps of which 3 warm-up).
export DEEPUM_NO_OVERSUBSCRIBE=1
T0=$(date +%s)
R=$OUT/records; mkdir -p $R
left() { echo $(( 585 - ($(date +%s) - T0) )); }
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
python3 setup.py -q build_ext --inplace > $R/build.log 2>&1 || tail -30 $R/build.log
PYTHONPATH=. python3 -c "from deepum.runtime import native_build as n; n.build_library(n.MANAGED_ALLOCATOR); n.load_torch_extension(n.online_engine())" > $R/prebuild.log 2>&1 || tail -20 $R/prebuild.log
echo "built in $(( $(date +%s) - T0 )) s"
sweep() {  # $1 workload, $2 budgets, $3 size flags (may be empty), $4 output folder name
  PYTHONPATH=. timeout $(left) python3 bench/run_all.py --out $R/${4:-sweep} --workloads $1 --budgets $2 --ablation-budgets $2 \
    --modes none,um,deepum --steps 8 --warmup 3 --timeout 150 ${3:+--size "$1=$3"} > $R/${4:-sweep}_$1.log 2>&1
  grep -E "speedup_over_um|vs_in_memory" $R/${4:-sweep}_$1.log | tail -4
  echo "$1 done $(( $(date +%s) - T0 )) s"
}
summary() {
  for f in $R/*/*.json; do python3 -c "
import json; d=json.load(open('$f')); s=d.get('stats') or {}
print('$(basename $f)', d.get('status'), 'step', round(d.get('step_s_median') or 0,4), 'steps', [round(x,3) for x in d.get('step_s') or []], 'sha', (d.get('parameter_sha256') or '')[:12], 'idx', s.get('indexed_launches'), 'hm', s.get('host_map_bytes'))" 2>/dev/null; done
  echo "total $(( $(date +%s) - T0 )) s"
}
