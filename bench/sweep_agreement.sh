#!/usr/bin/env bash
# The simulator against the sweep's GPU figures on this checkout's defaults: replays the recorded GPT-2
# trace the sweep's comparison uses at the sweep's capacities (half and three quarters of the footprint)
# under um, deepum and oracle, writing OUT/replay_<policy>_b<fraction>.json with the command, device,
# date and revision added. Run from the repository root; bench/sweep_agreement.py OUT prints the ratios.
#
#     bash bench/sweep_agreement.sh OUT
set -e
D=${1:?usage: bash bench/sweep_agreement.sh OUT}
mkdir -p "$D"
for pair in 0.50:6002049024 0.75:9003073536; do
  for policy in um deepum oracle; do
    command="python3 -m deepum replay bench/results/gpu_check/trace.npz --policy $policy --capacity ${pair#*:} --json"
    $command | python3 -c "import json, sys, datetime; sys.path.insert(0, 'bench')
from replay_throughput import cpu_model, source_revision
print(json.dumps({'command': sys.argv[1], 'device': f'CPU ({cpu_model()}), the simulator',
                  'date': datetime.date.today().isoformat(), 'revision': source_revision(),
                  **json.load(sys.stdin)}, indent=1))" "$command" > "$D/replay_${policy}_b${pair%%:*}.json"
  done
done
