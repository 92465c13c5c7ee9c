#!/usr/bin/env bash
# Replays the recorded traces under deepum's defaults and under each far_prefetches setting
# (dead_only.json, skip.json), writing bench/results/far_prefetches/replays/<trace>_<capacity>_<setting>.json,
# then the synthetic irregular workloads with both settings as variants (bench/irregular.py) to
# irregular.json and irregular.txt. Run from the repository root; summary.py compares them.
set -e
D=bench/results/far_prefetches
mkdir -p $D/replays
while read -r name trace capacity; do
  python3 -m deepum replay "$trace" --policy deepum --capacity "$capacity" --json > "$D/replays/${name}_${capacity}_evict.json"
  for setting in dead_only skip; do
    python3 -m deepum replay "$trace" --policy deepum --capacity "$capacity" --config "$D/$setting.json" --json \
      > "$D/replays/${name}_${capacity}_${setting}.json"
  done
done < <(grep -v '^#' bench/recorded_traces.txt)
python3 bench/irregular.py --config $D/dead_only.json --config $D/skip.json -o $D/irregular.json > $D/irregular.txt
