"""A workload's first steps phase by phase under one deepum.enable() mode and budget: the forward pass,
the backward pass and the optimizer step, each timed between two device synchronizations, with the
engine's launch count and sleep state after each phase. One JSON line per step on stdout.

    python3 bench/results/lazy_host_map/phase_probe.py --mode um --capacity 8941731840 --layers 24 \
        --hidden 1024 --heads 16 --seq 512 --batch 4
"""
import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import deepum  # noqa: E402
import workloads  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
workloads.add_arguments(parser)
parser.add_argument("--mode", choices=("um", "deepum"), required=True)
parser.add_argument("--capacity", type=int, required=True)
parser.add_argument("--steps", type=int, default=2)
args = parser.parse_args()

with deepum.enable(args.mode, capacity=args.capacity):
    import torch

    torch.use_deterministic_algorithms(True)
    torch.backends.cuda.matmul.allow_tf32 = False
    workload = workloads.build(torch, args, device="cuda", seed=0)
    model = workload.model
    optimizer = workload.make_optimizer(torch, model)
    for index in range(args.steps):
        batch = tuple(t.to("cuda") for t in workload.make_batch(index))
        phases, engine = {}, {}

        def timed(name, work):
            torch.cuda.synchronize()
            start = time.perf_counter()
            out = work()
            torch.cuda.synchronize()
            phases[name] = round(time.perf_counter() - start, 4)
            s = deepum.stats()
            engine[name] = {"launches": s["launches"], "asleep": s["asleep"], "faults": s["gpu_page_faults"]}
            return out

        optimizer.zero_grad(set_to_none=True)
        loss = timed("forward", lambda: workload.loss_fn(model, batch))
        timed("backward", loss.backward)
        timed("optimizer", optimizer.step)
        deepum.mark_iteration()
        print(json.dumps({"mode": args.mode, "step": index + 1, "phases_s": phases,
                          "total_s": round(sum(phases.values()), 4), "engine": engine}), flush=True)
