#!/usr/bin/env bash
# Replays the recorded traces with host_map_keep_uses 0 (keep0.json: every block host mapping chooses
# is mapped) and 3 (keep3.json), writing replays/<trace>_<capacity>_<setting>.json, then the synthetic
# irregular workloads with both as variants (bench/irregular.py) to irregular.json and irregular.txt.
# Run from the repository root, two replays at a time; summary.py compares them.
set -e
D=bench/results/keep_migrated
mkdir -p $D/replays
while read -r name trace capacity; do
  for setting in keep0 keep3; do
    python3 -m deepum replay "$trace" --policy deepum --capacity "$capacity" --config "$D/$setting.json" --json \
      > "$D/replays/${name}_${capacity}_${setting}.json" &
  done
  wait
done < <(grep -v '^#' bench/recorded_traces.txt)
python3 bench/irregular.py --config $D/keep0.json --config $D/keep3.json -o $D/irregular.json > $D/irregular.txt
