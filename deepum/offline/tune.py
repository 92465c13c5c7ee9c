"""Offline tuning: a staged search over the lookahead and the table sizes by trace replay.

The search replays the trace under the deepum policy for a few dozen configurations:

1. lookahead in LOOKAHEADS at the default tables;
2. then, one dimension at a time, block_rows, block_ways, block_successors and exec_records,
   each swept with the others held at the current pick;
3. finally lookahead again with the chosen tables.

Each stage keeps its pick by the selection rule below and passes it on. Replays are cached,
so a configuration that comes up twice is replayed once (about 23 distinct replays in all).

Selection rule ("best"): among candidates whose table memory fits the budget, take the fastest
simulated time t_min; the best is the candidate with the smallest table memory whose time is
within TIME_TOLERANCE (1%) of t_min, ties broken by time. That candidate is always on the
Pareto frontier of (time_s, table_bytes).
"""
from __future__ import annotations

import dataclasses

from .calibration import Calibration
from ..config import DeepUMConfig
from ..units import format_bytes

LOOKAHEADS = (8, 16, 32, 64, 128, 256)
BLOCK_ROWS = (64, 128, 256, 512, 1024, 2048)
BLOCK_WAYS = (1, 2, 4)
BLOCK_SUCCESSORS = (1, 2, 4)
EXEC_RECORDS = (1, 4, 8, 16, 24, 32)
TIME_TOLERANCE = 0.01

STAGES = (
    ("lookahead", LOOKAHEADS),
    ("block_rows", BLOCK_ROWS),
    ("block_ways", BLOCK_WAYS),
    ("block_successors", BLOCK_SUCCESSORS),
    ("exec_records", EXEC_RECORDS),
    ("lookahead", LOOKAHEADS),
)


@dataclasses.dataclass(frozen=True)
class Candidate:
    """One replayed configuration: simulated time (s), table memory (bytes), faults."""

    config: DeepUMConfig
    time_s: float
    table_bytes: int
    faults: int

    def to_dict(self) -> dict:
        return {"config": self.config.to_dict(), "time_s": self.time_s,
                "table_bytes": self.table_bytes, "faults": self.faults}


@dataclasses.dataclass
class TuneResult:
    """Outcome of `tune`: every candidate replayed, the Pareto frontier and the chosen one."""

    best: Candidate
    candidates: list[Candidate]
    pareto: list[Candidate]
    capacity_bytes: int
    budget_bytes: int | None

    def to_dict(self, trace_path: str | None = None) -> dict:
        """The best.json object; `DeepUMConfig.load` reads its "config" member."""
        return {
            "config": self.best.config.to_dict(),
            "time_s": self.best.time_s,
            "table_bytes": self.best.table_bytes,
            "faults": self.best.faults,
            "capacity_bytes": self.capacity_bytes,
            "budget_bytes": self.budget_bytes,
            "trace": trace_path,
            "rule": f"smallest table_bytes with time_s within {TIME_TOLERANCE:.0%} of the fastest"
                    + (" within budget_bytes" if self.budget_bytes is not None else ""),
            "candidates": [c.to_dict() for c in self.candidates],
            "pareto": [c.to_dict() for c in self.pareto],
        }


def pareto_frontier(candidates: list[Candidate]) -> list[Candidate]:
    """Candidates that no other candidate dominates (no worse on time and table memory, better on
    one), ordered by table memory ascending."""
    def dominates(a: Candidate, b: Candidate) -> bool:
        return (a.time_s <= b.time_s and a.table_bytes <= b.table_bytes
                and (a.time_s < b.time_s or a.table_bytes < b.table_bytes))

    frontier = [c for c in candidates if not any(dominates(o, c) for o in candidates)]
    return sorted(frontier, key=lambda c: (c.table_bytes, c.time_s))


def select(candidates: list[Candidate], budget_bytes: int | None = None) -> Candidate | None:
    """The selection rule (see module docstring); None when no candidate fits the budget."""
    fitting = [c for c in candidates if budget_bytes is None or c.table_bytes <= budget_bytes]
    if not fitting:
        return None
    fastest = min(c.time_s for c in fitting)
    near = [c for c in fitting if c.time_s <= fastest * (1 + TIME_TOLERANCE)]
    return min(near, key=lambda c: (c.table_bytes, c.time_s))


def tune(trace, capacity_bytes: int, *, budget_bytes: int | None = None,
         base_config: DeepUMConfig | None = None, calibration: Calibration | None = None,
         progress: bool = False) -> TuneResult:
    """Searches table sizes and lookahead for `trace` at `capacity_bytes` (see module docstring).

    base_config supplies everything the search does not vary (exec_ids, chain_blocks, switches).
    budget_bytes bounds the table memory (bytes) of the chosen configuration.
    Raises ValueError when no configuration replayed fits the budget.
    """
    from tqdm import tqdm

    from .simulator import simulate

    cache: dict[DeepUMConfig, Candidate] = {}

    def replay(config: DeepUMConfig) -> Candidate:
        if config not in cache:
            result = simulate(trace, "deepum", capacity_bytes, config=config, calibration=calibration)
            cache[config] = Candidate(config, float(result.time_s), int(result.table_bytes), int(result.faults))
        return cache[config]

    current = base_config or DeepUMConfig()
    with tqdm(total=sum(len(values) for _, values in STAGES), desc="tune", unit="config",
              disable=not progress) as bar:
        for field, values in STAGES:
            stage = []
            for value in values:
                stage.append(replay(dataclasses.replace(current, **{field: value})))
                bar.update()
            pick = select(stage, budget_bytes) or min(stage, key=lambda c: (c.table_bytes, c.time_s))
            current = pick.config

    candidates = list(cache.values())
    best = select(candidates, budget_bytes)
    if best is None:
        smallest = min(c.table_bytes for c in candidates)
        raise ValueError(f"no configuration fits the table budget of {format_bytes(budget_bytes)} "
                         f"({budget_bytes} bytes); the smallest tried needs {format_bytes(smallest)} "
                         f"({smallest} bytes); raise the budget")
    return TuneResult(best, candidates, pareto_frontier(candidates), capacity_bytes, budget_bytes)
