"""Per-iteration simulated times of deepum (default config) on every synthetic workload (12 iterations)
and on the recorded GPT-2 trace, at 0.75 and 0.5 of each footprint, with whole-run time and bytes
moved: the record two revisions of the policy core are compared by. Writes JSON with command, device,
revision and date.

    python bench/results/lazy_host_map/replay_iterations.py -o OUT.json
"""
import argparse
import datetime
import json
import subprocess
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

from deepum.config import DeepUMConfig  # noqa: E402
from deepum.offline.simulator import simulate  # noqa: E402
from deepum.offline.synth import GENERATORS  # noqa: E402
from deepum.offline.trace_io import read_trace  # noqa: E402
from deepum.units import parse_capacity  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("-o", "--output", type=Path, required=True)
args = parser.parse_args()
warnings.simplefilter("ignore")
traces = {name: generate(iterations=12) for name, generate in GENERATORS.items()}
traces["gpt2_trace"] = read_trace(ROOT / "bench" / "results" / "gpu_check" / "trace.npz")
rows = []
for name, trace in traces.items():
    for fraction in (0.75, 0.5):
        capacity = parse_capacity(fraction, trace.footprint_bytes())
        for policy in ("um", "deepum"):
            r = simulate(trace, policy, capacity, config=DeepUMConfig())
            rows.append({"workload": name, "capacity_fraction": fraction, "policy": policy, "time_s": r.time_s,
                         "h2d_bytes": r.h2d_bytes, "d2h_bytes": r.d2h_bytes,
                         "iteration_s": [x["time_s"] for x in sorted(r.per_iteration, key=lambda x: x["iteration"])]})
revision = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=Path.cwd()).stdout.strip()
args.output.write_text(json.dumps({"command": " ".join(["python", *sys.argv]), "device": "cpu (simulator)",
                                   "revision": revision,
                                   "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                                   "rows": rows}, indent=1) + "\n")
print(f"wrote {args.output}")
