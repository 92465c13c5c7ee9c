# Sourced by command_b.sh and command_c.sh here and by later sweeps' command scripts: builds the tree
# (bench/device_setup.sh), runs a migration probe for the UVM-path bound, and defines sweep()
# (bench/run_all.py at 0.75 and 0.5: none, um and deepum, 8 steps of which 3 warm-up, the bound at the
# probe's rates) and sweep_part() (one call's share of the sweep's workloads at their sizes, then the
# summary).
source bench/device_setup.sh
left() { echo $(( 585 - ($(date +%s) - T0) )); }
nvidia-smi --query-gpu=index,name,memory.free,driver_version --format=csv > $R/gpu.txt
timeout 60 python3 bench/migration_probe.py --gib 2 -o $R/migration_probe.json > $R/migration_probe.log 2>&1
grep "16 MiB" $R/migration_probe.log
sweep() {  # $1 workload, $2 size flags
  PYTHONPATH=. timeout $(left) python3 bench/run_all.py --out $R/sweep --workloads $1 --budgets 0.75,0.5 \
    --ablation-budgets 0.75,0.5 --modes none,um,deepum --steps 8 --warmup 3 --timeout 150 \
    --uvm-rates $R/migration_probe.json --size "$1=$2" > $R/sweep_$1.log 2>&1
  grep -E "speedup_over_um|vs_in_memory" $R/sweep_$1.log | tail -4
  echo "$1 done $(( $(date +%s) - T0 )) s"
}
summary() {
  for f in $R/sweep/*.json; do python3 -c "
import json; d=json.load(open('$f')); s=d.get('stats') or {}; b=d.get('bounds') or {}
r=lambda x: round(x,4) if isinstance(x,float) else x
print('$(basename $f)', d.get('status'), 'step', r(d.get('step_s_median') or 0), 'x uvm', r(b.get('step_over_uvm_path')),
      'sha', (d.get('parameter_sha256') or '')[:12], 'errors', s.get('cuda_errors'), 'refused', s.get('direct_prefetch_refusals'), s.get('direct_eviction_refusals'))" 2>/dev/null; done
  echo "total $(( $(date +%s) - T0 )) s"
}
sweep_part() {  # $1: a (GPT-2 24L, BERT-Large 24L, DLRM) or b (ResNet-152, the MoE)
  case $1 in
    a) sweep gpt2 "--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4"
       sweep bert-large "--layers 24 --seq 128 --batch 8"
       sweep dlrm "--tables 8 --rows 500000 --dim 64 --lookups 32 --batch 2048" ;;
    b) sweep resnet152 "--batch 16 --image 224"
       sweep moe "--layers 12 --hidden 768 --heads 12 --seq 512 --batch 2" ;;
  esac
  summary
  rm -rf $R/sweep/logs
}
