"""Per-iteration simulated times of um and deepum (default config) on every synthetic workload (12
iterations) and on the recorded GPT-2 trace, at 0.75 and 0.5 of each footprint, with whole-run time and
bytes moved: the record two revisions of the policy core are compared by. Writes a simulator record
(bench/replay_throughput.py's) with the revision it ran at.

    python bench/results/lazy_host_map/replay_iterations.py -o OUT.json
"""
import argparse
import subprocess
import sys
import warnings
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(BENCH.parent), str(BENCH)]

from deepum.config import DeepUMConfig  # noqa: E402
from deepum.offline.simulator import simulate  # noqa: E402
from deepum.offline.synth import GENERATORS  # noqa: E402
from deepum.offline.trace_io import read_trace  # noqa: E402
from deepum.units import parse_capacity  # noqa: E402
from replay_throughput import write_simulator_record  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("-o", "--output", type=Path, required=True)
args = parser.parse_args()
warnings.simplefilter("ignore")
traces = {name: generate(iterations=12) for name, generate in GENERATORS.items()}
traces["gpt2_trace"] = read_trace(BENCH / "results" / "gpu_check" / "trace.npz")
rows = []
for name, trace in traces.items():
    for fraction in (0.75, 0.5):
        capacity = parse_capacity(fraction, trace.footprint_bytes())
        for policy in ("um", "deepum"):
            r = simulate(trace, policy, capacity, config=DeepUMConfig())
            rows.append({"workload": name, "capacity_fraction": fraction, "policy": policy, "time_s": r.time_s,
                         "h2d_bytes": r.h2d_bytes, "d2h_bytes": r.d2h_bytes,
                         "iteration_s": [x["time_s"] for x in r.per_iteration]})
revision = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
write_simulator_record(args.output, {"revision": revision, "rows": rows})
