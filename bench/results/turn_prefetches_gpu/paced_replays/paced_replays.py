"""Replays the 20-iteration bf16 GPT-2 trace under policy deepum at half its footprint with the defaults,
r6b8 and r6b8r95 (../r6b8.json, ../r6b8r95.json), with the bundled calibration and with the launching
thread paced as on the GPU of calls A and C: the framework's 31 µs a launch (`none`'s enqueue, about
0.104 s a step over 3,340 launches) and deepum's hook 18.7 µs a launch (the defaults' 62.8 ms a step
over 3,354 launches in call C) or 11.6 µs (r6b8r95's 38.8 ms). Writes each calibration and replay
here and prints each setting's median time of iterations 10-19 against the defaults'.

    python3 bench/results/turn_prefetches_gpu/paced_replays/paced_replays.py
"""
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[3]
TRACE = ROOT / "bench/results/repeat_plans_gpu/call_e/gpt2_bf16_20_trace.npz"
CAPACITY = 6138363904
PACING = {"bundled": None, "framework": (31e-6, 0.0), "framework_hook_18.7us": (31e-6, 18.7e-6),
          "framework_hook_11.6us": (31e-6, 11.6e-6)}
SETTINGS = ("defaults", "r6b8", "r6b8r95")


def main() -> int:
    base = json.loads((ROOT / "deepum/offline/calibrations/h200.json").read_text())
    medians = {}
    for pacing, values in PACING.items():
        flags = []
        if values:
            calibration = dict(base, launch_cpu_s=values[0], hook_cpu_s=values[1])
            path = HERE / f"{pacing}.calibration.json"
            path.write_text(json.dumps(calibration, indent=1) + "\n")
            flags = ["--calibration", str(path)]
        for setting in SETTINGS:
            config = [] if setting == "defaults" else ["--config", str(HERE.parent / f"{setting}.json")]
            out = subprocess.run([sys.executable, "-m", "deepum", "replay", str(TRACE), "--policy", "deepum",
                                  "--capacity", str(CAPACITY), *config, *flags, "--json"],
                                 check=True, capture_output=True, text=True, cwd=ROOT).stdout
            (HERE / f"{pacing}_{setting}.json").write_text(out)
            iterations = json.loads(out)["per_iteration"][10:]
            medians[pacing, setting] = statistics.median(i["time_s"] for i in iterations)
    print("| pacing | defaults | r6b8 | r6b8r95 | r6b8 / defaults | r6b8r95 / defaults |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for pacing in PACING:
        d, a, b = (medians[pacing, s] for s in SETTINGS)
        print(f"| {pacing} | {d:.4f} s | {a:.4f} s | {b:.4f} s | {a / d:.3f} | {b / d:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
