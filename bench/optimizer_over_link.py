"""How long does Adam's step take with its state (the moments) on the host, read and written by the GPU
over the link as deepum's host mapping leaves it, against the state in GPU memory? torch.optim.Adam
foreach (the sweep's fp32 transformers) and fused, over parameters shaped like the 24-layer models of
bench/workloads.py (a transformer layer's weights and biases, and the embeddings). One JSON record:
milliseconds a step per model, implementation and placement, the state's bytes, and the state's bytes
over the mapped step's time.

    python3 bench/optimizer_over_link.py -o bench/results/users_way/optimizer_over_link.json

Safety: the mapped state is the only managed memory (cudaMallocManaged, preferred location the host,
accessed by the GPU), refused above a quarter of the free GPU memory.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

MODELS = {  # hidden size, layers, embedding rows (vocabulary and positions)
    "bert-large": (1024, 24, 30522 + 512 + 2),
    "gpt2": (1024, 24, 50257 + 1024),
}
IMPLEMENTATIONS = ("foreach", "fused")
PLACEMENTS = ("gpu", "host_mapped")


def parameter_shapes(hidden: int, layers: int, embedding_rows: int) -> list[tuple[int, ...]]:
    """A transformer's parameter shapes: per layer the fused QKV, output and two MLP projections with
    their biases and two layer norms; then the embeddings and a final layer norm."""
    h = hidden
    layer = [(3 * h, h), (3 * h,), (h, h), (h,), (4 * h, h), (4 * h,), (h, 4 * h), (h,), (h,), (h,), (h,), (h,)]
    return layer * layers + [(embedding_rows, h), (h,), (h,)]


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS),
                        help="comma-separated, of " + ", ".join(MODELS) + " (default: all)")
    parser.add_argument("--steps", type=int, default=10, help="timed steps per case (default %(default)s)")
    parser.add_argument("-o", "--output", type=Path, required=True, help="JSON record to write")
    args = parser.parse_args(argv)
    args.models = [m for m in args.models.split(",") if m]
    unknown = [m for m in args.models if m not in MODELS]
    if unknown or not args.models:
        parser.error(f"--models: unknown {unknown or 'empty'}; known: {', '.join(MODELS)}")
    if not 1 <= args.steps <= 1000:
        parser.error(f"--steps must be in [1, 1000], got {args.steps}")
    args.parser = parser
    return args


def map_state_from_host(torch, rt, check, optimizer, size: int):
    """Moves every Adam moment of `optimizer` into one managed buffer the GPU maps from the host
    (preferred location host, accessed by GPU 0, its pages on the host); returns the buffer's address."""
    from managed_kernel_probe import managed_tensor
    from um_calls import locations

    gpu, host = locations(rt)
    flat, address = managed_tensor(torch, rt, check, size)
    check(rt.cudaMemAdvise(address, size, rt.cudaMemoryAdvise.cudaMemAdviseSetPreferredLocation, host))
    check(rt.cudaMemAdvise(address, size, rt.cudaMemoryAdvise.cudaMemAdviseSetAccessedBy, gpu))
    offset = 0
    for state in optimizer.state.values():
        for key in ("exp_avg", "exp_avg_sq"):
            moment = state[key]
            view = flat[offset:offset + moment.numel()].view_as(moment)
            view.copy_(moment)
            state[key] = view
            offset += moment.numel()
    check(rt.cudaMemPrefetchAsync(address, size, host, 0, torch.cuda.current_stream().cuda_stream))
    torch.cuda.synchronize()
    return address


def time_steps(torch, optimizer, steps: int) -> list[float]:
    """Milliseconds of each of `steps` optimizer steps, by CUDA events, after two untimed ones."""
    for _ in range(2):
        optimizer.step()
    times = []
    for _ in range(steps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        optimizer.step()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return times


def main(argv=None) -> int:
    args = parse_args(argv)
    import torch
    from cuda.bindings import runtime as rt
    from link_paths import refuse_past_a_quarter_of_free, write_record
    from um_calls import check

    cases = []
    for model in args.models:
        shapes = parameter_shapes(*MODELS[model])
        params = [torch.nn.Parameter(torch.randn(s, device="cuda") * 0.02) for s in shapes]
        for p in params:
            p.grad = torch.randn_like(p) * 1e-3
        parameters = sum(p.numel() for p in params)
        state_bytes = 2 * 4 * parameters
        refuse_past_a_quarter_of_free(args.parser, state_bytes >> 20, torch, f"{model}'s Adam state")
        for implementation in IMPLEMENTATIONS:
            for placement in PLACEMENTS:
                optimizer = torch.optim.Adam(params, lr=1e-4, **{implementation: True})
                optimizer.step()  # makes the state
                address = map_state_from_host(torch, rt, check, optimizer, state_bytes) \
                    if placement == "host_mapped" else None
                ms = time_steps(torch, optimizer, args.steps)
                median = statistics.median(ms)
                cases.append({"model": model, "implementation": implementation, "placement": placement,
                              "parameters": parameters, "tensors": len(params),
                              "state_bytes": state_bytes, "step_ms": ms, "step_ms_median": median,
                              "state_gb_per_s": state_bytes / (median / 1e3) / 1e9})
                print(f"{model} {implementation} {placement}: {median:.2f} ms a step "
                      f"({state_bytes / 1e9:.2f} GB of state)", flush=True)
                del optimizer
                torch.cuda.synchronize()
                if address is not None:
                    check(rt.cudaFree(address))
        del params
        torch.cuda.empty_cache()
    write_record(args.output, torch, cases=cases)
    return 0


if __name__ == "__main__":
    sys.exit(main())
