"""One line per record of a call: status, median step, steps, parameter digest, the launching
thread's figures per step (hook, its kernel waits, the driver's launch calls, the enqueue time), the
step over its UVM-path bound, faults per step and whether the worker had a context of its own.

    python3 bench/results/worker_context/summary.py RECORDS_FOLDER
"""
import glob
import json
import os
import sys

for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    record = json.load(open(path))
    if "step_s" not in record:
        continue
    bounds, split, stats = record.get("bounds") or {}, record.get("hook_split_s_per_step") or {}, record.get("stats") or {}
    print(os.path.basename(path)[:-5], record["status"], round(record["step_s_median"], 3),
          [round(x, 2) for x in record["step_s"]], record["parameter_sha256"][:12],
          "hook", round(record.get("hook_s_per_step") or 0, 3), "wait", round(split.get("wait", 0), 3),
          "drv", round(record.get("launch_driver_s_per_step") or 0, 3),
          "enq", round(record.get("enqueue_s_median") or 0, 3),
          "xbound", round(bounds.get("step_over_uvm_path") or 0, 2),
          "faults", round(record.get("faults_per_step") or 0, 1),
          "own", stats.get("worker_own_context"), "errors", stats.get("cuda_errors"))
