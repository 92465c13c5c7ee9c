#!/usr/bin/env bash
# Replays the recorded traces with host_map_keep_uses 3 counted in passes (keep3.json of
# bench/results/keep_migrated on this tree), writing replays/<trace>_<capacity>_passes.json; summary.py
# sets them beside that folder's replays of 0 and of 3 counted in launches. Run from the repository
# root, two replays at a time; then the synthetic irregular workloads with 0 and 3 as variants
# (bench/irregular.py) to irregular.json and irregular.txt.
set -e
D=bench/results/keep_passes
mkdir -p $D/replays
pids=()
while read -r name trace capacity; do
  python3 -m deepum replay "$trace" --policy deepum --capacity "$capacity" \
    --config bench/results/keep_migrated/keep3.json --json > "$D/replays/${name}_${capacity}_passes.json" &
  pids+=($!)
  if [ ${#pids[@]} -ge 2 ]; then wait "${pids[@]}"; pids=(); fi
done < <(grep -v '^#' bench/recorded_traces.txt)
wait
python3 bench/irregular.py --config bench/results/keep_migrated/keep0.json --config bench/results/keep_migrated/keep3.json \
  -o $D/irregular.json > $D/irregular.txt
