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
    $command | python3 -c "import json, sys, datetime, subprocess; r = json.load(sys.stdin); print(json.dumps({
        'command': sys.argv[1], 'device': 'CPU (x86_64), the development machine',
        'date': datetime.date.today().isoformat(),
        'revision': subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], capture_output=True, text=True).stdout.strip(),
        **r}, indent=1))" "$command" > "$D/replay_${policy}_b${pair%%:*}.json"
  done
done
