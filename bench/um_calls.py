"""cuda-bindings helpers shared by the unified-memory probes (migration_probe.py, populate_probe.py).
Imported only inside their main(): cuda-bindings needs a GPU machine."""
from __future__ import annotations


def check(result):
    """The value of a cuda-bindings call, or an error naming its status."""
    if int(result[0]) != 0:
        raise RuntimeError(f"CUDA call failed with {result[0]}")
    return result[1] if len(result) == 2 else None


def locations(rt, device: int = 0):
    """(GPU `device`, host) as cudaMemLocation, for prefetches and discards."""
    def location(kind):
        loc = rt.cudaMemLocation()
        loc.type = kind
        loc.id = device if kind == rt.cudaMemLocationType.cudaMemLocationTypeDevice else 0
        return loc

    return (location(rt.cudaMemLocationType.cudaMemLocationTypeDevice),
            location(rt.cudaMemLocationType.cudaMemLocationTypeHost))
