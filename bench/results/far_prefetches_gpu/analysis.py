"""The figures docs/results.md quotes from this folder's lockstep calls: per model and tree, the pairs'
ratios (deepum / `none`, each pair's median steps), the per-round ratios to this tree's defaults of
the pairs and of deepum's and `none`'s run medians, the bytes each run moved a step, the hook's time,
each deepum run's even steps' median minus its odd steps' (steps 4-23), and whether every run is
bitwise equal to `none` with no CUDA error; then the replays of replays/replay.sh (the median of
iterations 3-7) against the sweep's GPU speed-ups over `um`.

    python3 bench/results/far_prefetches_gpu/analysis.py
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from lockstep_ab import against_first, summary  # noqa: E402

CALLS = {"gpt2": HERE / "call_a" / "gpt2", "bert-large": HERE / "call_b" / "bert"}
GB = 1e9
VERSUS = (("against_first", "pairs"), ("deepum_against_first", "deepum's run medians"),
          ("none_against_first", "none's"))


def runs(folder: Path, mode: str) -> list[dict]:
    """The folder's records of one mode, in round order."""
    return [json.loads(p.read_text()) for p in sorted(folder.glob(f"*_{mode}_*.json"))]


def main() -> None:
    for model, folder in CALLS.items():
        record = json.loads((folder / "lockstep_ab.json").read_text())
        print(f"{model}: {record['command']}")
        rows = summary(folder, [model], [row["tree"] for row in record["rows"]])
        against_first(rows)
        for row in rows:
            deepum, none = (runs(folder / f"{model}_{row['tree']}", mode) for mode in ("deepum", "none"))
            hashes = {r["parameter_sha256"][:12] for r in deepum + none}
            print(f"  {row['tree']:10s} pairs {' '.join(f'{p:.3f}' for p in row['pairs'])}"
                  f"  median {row['pair_median']:.3f}")
            versus = "; ".join(f"{name} {row[key]['median']:.3f}, lower in {row[key]['lower']} of "
                               f"{len(row[key]['ratios'])}" for key, name in VERSUS if key in row)
            if versus:
                print(f"  {'':10s} against the defaults, by round: {versus}")
            print(f"  {'':10s} deepum {row['deepum_step_s']:.4f} s, none {row['none_step_s']:.4f} s;"
                  f" H2D {statistics.median(r['h2d_bytes_per_step'] for r in deepum) / GB:.3f} GB,"
                  f" D2H {statistics.median(r['d2h_bytes_per_step'] for r in deepum) / GB:.3f} GB a step;"
                  f" GPU busy {statistics.median(r['gpu_busy_s_per_step'] for r in deepum):.4f} s,"
                  f" idle {statistics.median(r['gpu_idle_s_per_step'] for r in deepum):.4f} s;"
                  f" hook {statistics.median(r['hook_s_per_step'] for r in deepum) * 1e3:.1f} ms")
            parity = [statistics.median(r["step_s"][4::2]) - statistics.median(r["step_s"][5::2]) for r in deepum]
            print(f"  {'':10s} deepum's even steps minus odd, ms: {' '.join(f'{d * 1e3:.0f}' for d in parity)}")
            print(f"  {'':10s} parameters {sorted(hashes)} ({len(deepum)} deepum, {len(none)} none runs);"
                  f" CUDA errors {sum(r['stats']['cuda_errors'] for r in deepum)};"
                  f" faults a step {max(r['faults_per_step'] for r in deepum)}")


# The sweep's GPT-2 at half and three quarters of its footprint on the GPU: `um`'s and deepum's steps, s
# (bench/results/sweep_fewer_driver_calls/).
SWEEP_GPU = {"0.50": (4.324, 0.4007), "0.75": (3.172, 0.3283)}


def replays() -> None:
    """The replayed speed-up over `um` on the default against the sweep's on the GPU."""
    print("replays of bench/results/gpu_check/trace.npz, median of iterations 3-7")
    for fraction, (um_gpu, deepum_gpu) in SWEEP_GPU.items():
        time = {policy: statistics.median(i["time_s"] for i in json.loads(
            (HERE / "replays" / f"replay_{policy}_b{fraction}.json").read_text())["per_iteration"][3:8])
            for policy in ("um", "deepum", "oracle")}
        replayed, gpu = time["um"] / time["deepum"], um_gpu / deepum_gpu
        print(f"  {fraction}: um {time['um']:.3f} s, deepum {time['deepum']:.4f} s, oracle {time['oracle']:.4f} s;"
              f" {replayed:.2f}x against the GPU's {gpu:.2f}x: {replayed / gpu:.2f}")


if __name__ == "__main__":
    main()
    replays()
