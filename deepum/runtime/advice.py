"""Mode advise: unified-memory advice per data type. The module hooks advise each model's parameters
(preferred location and accessed-by the GPU) and mark its inputs read-mostly during a call;
advise_model() does the same by hand."""
from __future__ import annotations

import threading

from . import gpu

PAGE_BYTES = 4096
"""CPU page size: the driver rounds advice ranges outwards to it."""


class AdviceHooks:
    """Mode advise, automatically: at each outermost module call, advises the module's parameters
    (once per storage) and marks its input tensors read-mostly until the call returns."""

    def __init__(self, device: int):
        from torch.nn.modules import module as nn_module

        self.device = device
        self.advised: set[tuple[int, int]] = set()
        self.local = threading.local()
        self.handles = [nn_module.register_module_forward_pre_hook(self._before),
                        nn_module.register_module_forward_hook(self._after, always_call=True)]

    def _before(self, module, args):
        depth = getattr(self.local, "depth", 0)
        self.local.depth = depth + 1
        if depth == 0:
            _advise_parameters(module, self.device, self.advised)
            self.local.inputs = _advise_inputs(args, self.device, "read_mostly")

    def _after(self, module, args, output):
        depth = getattr(self.local, "depth", 0)
        if depth == 0:  # the hooks were installed while this call was under way
            return
        self.local.depth = depth - 1
        if depth == 1:
            for address, nbytes in self.local.inputs:
                gpu.advise(address, nbytes, "unset_read_mostly", self.device)
            self.local.inputs = []

    def remove(self):
        for handle in self.handles:
            handle.remove()


def _managed_storages(tensors, min_bytes: int = 1):
    """(address, bytes) of the distinct managed storages behind CUDA tensors."""
    seen = {}
    for tensor in tensors:
        if not tensor.is_cuda:
            continue
        storage = tensor.untyped_storage()
        address, nbytes = storage.data_ptr(), storage.nbytes()
        if nbytes >= min_bytes and address not in seen and gpu.memory_type(address) == gpu.MEMORY_TYPE_MANAGED:
            seen[address] = nbytes
    return list(seen.items())


def _tensors_in(value):
    """Tensors found in nested tuples, lists and dict values."""
    import torch

    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors_in(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors_in(item)


def _advise_parameters(model, device: int, advised: set) -> tuple[int, int]:
    """Preferred location and accessed-by `device` for the model's managed parameters not yet in
    `advised`; returns (tensors, bytes) advised now."""
    count = total = 0
    for address, nbytes in _managed_storages(model.parameters()):
        if (address, nbytes) in advised:
            continue
        gpu.advise(address, nbytes, "preferred_location", device)
        gpu.advise(address, nbytes, "accessed_by", device)
        advised.add((address, nbytes))
        count, total = count + 1, total + nbytes
    return count, total


def _advise_inputs(inputs, device: int, advice: str) -> list[tuple[int, int]]:
    """Applies `advice` to the whole pages inside each managed input tensor (never to a page it
    shares with other data); returns the advised (address, bytes) ranges."""
    ranges = []
    for address, nbytes in _managed_storages(_tensors_in(inputs), min_bytes=PAGE_BYTES):
        start = -(-address // PAGE_BYTES) * PAGE_BYTES
        end = (address + nbytes) // PAGE_BYTES * PAGE_BYTES
        if end > start:
            gpu.advise(start, end - start, advice, device)
            ranges.append((start, end - start))
    return ranges


def advise_model(model, inputs=None, device: int | None = None) -> dict:
    """Mode advise by hand (Appl. Sci. 2021): the model's managed parameters get preferred location
    and accessed-by `device` (default: the session's device), and the managed `inputs` (tensors,
    nested in lists/tuples/dicts) get read-mostly. Tensors not in managed memory are skipped.
    Returns the tensors and bytes advised."""
    if device is None:
        from .session import active_device  # session imports this module: import it at call time

        device = active_device()
    parameter_count, parameter_bytes = _advise_parameters(model, device, set())
    input_ranges = _advise_inputs(inputs, device, "read_mostly") if inputs is not None else []
    return {"parameter_storages": parameter_count, "parameter_bytes": parameter_bytes,
            "input_ranges": len(input_ranges), "input_bytes": sum(n for _, n in input_ranges)}
