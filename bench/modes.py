"""The benchmark modes, in one table that every bench script and the bench report read.

A mode is one way of running a training workload: on the GPU, the deepum.enable() mode bench/train.py
trains in and the DeepUMConfig fields it changes; offline, the simulator policy bench/policy_comparison.py
replays it with. The lists below (the GPU modes, the sweep's modes, the modes under a budget, the
ablations, the simulated variants) are all drawn from MODES, in its order.
"""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Mode:
    """One benchmark mode.

    name: its name in commands, records, file names and plots.
    runtime: the deepum.enable() mode it trains in on the GPU (none, um, advise, deepum); None: the
        mode exists only in the simulator.
    config: DeepUMConfig fields it changes from the defaults (or from train.py --config).
    budgeted: keeps its data in managed memory under a capacity budget; False: runs without a budget
        in the GPU's own memory (in-memory reference, PyTorch's own offload).
    sweep: part of bench/run_all.py's default sweep.
    ablation: a deepum ablation: the sweep runs it only at --ablation-budgets.
    policy: the simulator policy bench/policy_comparison.py replays it with; None: not compared there.
    peer: a way plain PyTorch lowers its own peak GPU memory, which a user would try before unified
        memory; bench/peers.py runs um and deepum with that peak as their capacity.
    """

    name: str
    runtime: str | None
    config: dict = dataclasses.field(default_factory=dict)
    budgeted: bool = True
    sweep: bool = False
    ablation: bool = False
    policy: str | None = None
    peer: bool = False


MODES = (
    Mode("none", "none", budgeted=False, sweep=True),
    # plain PyTorch with every tensor the forward pass saves kept in pinned host memory
    # (torch.autograd.graph.save_on_cpu(pin_memory=True))
    Mode("save_on_cpu", "none", budgeted=False, sweep=True, peer=True),
    # plain PyTorch recomputing each block's activations in backward (torch.utils.checkpoint)
    Mode("checkpoint", "none", budgeted=False, peer=True),
    # plain PyTorch with the optimizer's state and step on the CPU (torchao's CPUOffloadOptimizer, or
    # FSDP with CPUOffload(offload_params=True) on one GPU where torchao is not importable)
    Mode("cpu_offload", "none", budgeted=False, peer=True),
    Mode("um", "um", sweep=True, policy="um"),
    Mode("advise", "advise", sweep=True),
    Mode("deepum", "deepum", sweep=True, policy="deepum"),
    Mode("oracle", None, policy="oracle"),
    Mode("deepum-no-prefetch", "deepum", {"prefetch": False}, ablation=True, policy="deepum"),
    Mode("deepum-no-pre-evict", "deepum", {"pre_evict": False}, sweep=True, ablation=True, policy="deepum"),
    Mode("deepum-no-invalidate", "deepum", {"invalidate": False}, sweep=True, ablation=True, policy="deepum"),
    # DeepUM's eviction rule: least recently migrated blocks first
    Mode("deepum-lru", "deepum", {"eviction": "lru"}, sweep=True, ablation=True),
    # tables that learn from the CUPTI fault log instead of the kernels' arguments
    Mode("deepum-faults", "deepum", {"learn_from": "faults"}, policy="deepum"),
)
BY_NAME = {mode.name: mode for mode in MODES}

GPU_MODES = tuple(mode.name for mode in MODES if mode.runtime is not None)
"""Modes bench/train.py can run."""
SWEEP_MODES = tuple(mode.name for mode in MODES if mode.sweep)
"""bench/run_all.py's modes unless --modes names others."""
UNBUDGETED_MODES = tuple(name for name in GPU_MODES if not BY_NAME[name].budgeted)
"""GPU modes that run without a capacity budget."""
BUDGETED_MODES = tuple(name for name in GPU_MODES if BY_NAME[name].budgeted)
"""GPU modes that keep data in managed memory under a capacity budget."""
ABLATIONS = tuple(mode.name for mode in MODES if mode.ablation)
"""deepum ablations: the sweep runs them only at its ablation budgets."""
PEER_MODES = tuple(mode.name for mode in MODES if mode.peer)
"""Plain-PyTorch ways to lower peak GPU memory that bench/peers.py compares um and deepum with."""
SIMULATED_MODES = tuple(mode.name for mode in MODES if mode.policy is not None)
"""Variants bench/policy_comparison.py replays, each with its simulator policy."""
