#!/usr/bin/env bash
# What a faster eviction would buy (simulator, CPU): the recorded 24-layer GPT-2 trace replayed at half
# its footprint with the bundled h200 calibration, its eviction rate set to 14 (as bundled), 28 and
# 50 GB/s; deepum, and um and oracle at 14 and 50. Run from the repository root.
set -e
D=bench/results/uvm_ioctl/eviction_what_if
for r in 14 28 50; do
  python3 -c "
import json
c = json.load(open('deepum/offline/calibrations/h200.json'))
c['evict_d2h_bytes_per_s'] = $r * 1e9
c['measured'] = 'what-if: the bundled h200 calibration with eviction at $r GB/s'
json.dump(c, open('$D/evict_$r.json', 'w'), indent=1)"
  deepum replay bench/results/gpu_check/trace.npz --policy deepum --capacity 5961154560 --calibration $D/evict_$r.json --json > $D/deepum_evict_$r.json
done
for r in 14 50; do
  for p in um oracle; do
    deepum replay bench/results/gpu_check/trace.npz --policy $p --capacity 5961154560 --calibration $D/evict_$r.json --json > $D/${p}_evict_$r.json
  done
done
python3 - <<'PY'
import json
D = "bench/results/uvm_ioctl/eviction_what_if"
compute = None
for name in ("deepum_evict_14", "deepum_evict_28", "deepum_evict_50", "um_evict_14", "um_evict_50", "oracle_evict_14", "oracle_evict_50"):
    d = json.load(open(f"{D}/{name}.json"))
    compute = compute or d["compute_s"] / d["iterations"]
    last = d["per_iteration"][-4:]
    step = sum(x["time_s"] for x in last) / len(last)
    print(f"{name}: iterations 5-8 {step:.3f} s, {step / compute:.2f}x the compute of an iteration ({compute:.3f} s)")
PY
