"""The policy: every decision deepum makes about UM blocks. This is the readable specification of the
native policy core (driver_hooks/policy.hpp), which the GPU engine and the offline simulator both run;
tests/test_policy.py checks that the two decide alike on every launch.

Blocks are UM block numbers (address >> 21). At each launch the policy decides, in this order:

1. **Demand.** The kernel's blocks that are not resident become resident: it faults on them, or
   (``demand_prefetch``) they are prefetched on its stream just before it.
2. **Pressure gating.** Nothing is predicted, learned or prefetched until the blocks touched so far
   exceed the capacity; until then a block stays resident once it has arrived.
3. **Prediction** (mode deepum, under pressure): the correlation predictor's window, the running kernel
   and the kernels predicted after it with their blocks, is updated, and (learn_from "accesses") the
   kernel's blocks are learned. Blocks in the window are protected from pre-eviction.
4. **Victims** while more blocks are resident than the capacity holds: by the replacement rule among the
   blocks the running kernel does not use and, with pre-eviction, no window entry needs; the driver's
   rule (least recently migrated, not in use) when the rule finds none.
5. **Prefetches** of the window's blocks in need order, entry by entry, each entry's blocks in address
   order, evicting for room; it stops where no victim is allowed: a victim for the prefetch of entry i
   must not be foreseen at or before launch ``launch + i + 1``. The entries not yet prefetched wait
   until the nearest of them (entry i, needed i launches on) is due: ``i + min(prefetch_batch,
   lookahead) <= lookahead + 1``, so that a batch of launches' predictions is prefetched at once
   (with ``prefetch_batch`` 1, at every launch). With next-use eviction and ``far_prefetches`` other
   than "evict", a block that next-use foresight foresees only beyond the window (after launch
   ``launch + lookahead + 1``, or nowhere) is, while the GPU is full, not prefetched ("skip") or
   prefetched only in a dead block's place ("dead_only": the rule's victim, if it is not dead, stays
   a candidate and the prefetches stop, as where no victim is allowed).
   **The schedule** (deepum with ``schedule``, deepum.specs.schedule) replaces step 5, and adds its
   evictions before step 4, while the iteration's launches match the planned ones: its victims
   for this launch leave (those resident and not used by the running kernel), then its prefetches are
   made in its order, evicting by the replacement rule where a slot is still lacking (a victim for a
   block needed `lead` launches ahead must not be foreseen at or before ``launch + lead``; none: the
   prefetches stop).
6. **Invalidation** (deepum with invalidate): a victim or a prefetched block that is dead moves without
   a copy (``discard``, ``populate``) instead of with one (``evict``, ``prefetch``).

**Host mapping** (deepum with ``host_map_uses`` and next-use eviction), at the first launch of each
iteration under pressure, before step 1: the blocks the last iteration used in at most
``host_map_uses`` launches, all within ``host_map_span_percent`` of its launches (the optimizer's
state: touched once per step, between long gaps; a block's uses counted since it last received
memory allocated since the launch before, fill launches not counted: the state is created and
zero-filled in the first step, in memory earlier tensors of that step used) or, with ``host_map_indexed``, all by indexed kernels
whatever their span (an embedding table: its lookups and its sparse update read and write only the rows
they name), and not dead, are mapped from the host (``map_host``; none is demanded, prefetched or counted resident while
mapped: its kernels read and write it over the link), but for those that stay migrated (with
``host_map_keep_uses``: the chosen blocks the last iteration went over in at least that many passes,
consecutive launches counted as one pass, most passes first, ties ascending, as many as the capacity
less the other blocks the last iteration used within the chosen blocks' span,
deepum.specs.next_use.NextUseEviction.used_beside); mapped blocks that no longer qualify are given back
to migration (``map_gpu``; they come back on demand). Blocks given back come first, then blocks
mapped, each ascending. A chosen block that is resident stays so until room is needed: such blocks
are then the victims (ascending, any but the running kernel's; its next use reads it over the link)
unless the replacement rule's victim is dead (it leaves without a copy), and each is mapped as it leaves
(``map_host`` in place of ``evict``, with the eviction's copy); one that is dead by then is evicted as
any other. So mapping moves nothing in an iteration that lacks no room.

**Repeated plans** (deepum with ``repeat_plans_percent`` and prefetch or pre-eviction, not with the
schedule; deepum.specs.plan_records; without prefetch and pre-eviction the policy predicts nothing and
its plans are the driver's rule, which stays the driver's own): once an iteration under pressure has launched and decided at
``repeat_plans_percent`` of its places or more what the iteration ``back`` before it launched and
decided there (the least ``back`` from 1 to deepum.specs.plan_records.REPEAT_BACK), and the iteration
``back`` − 1 before it did the same against the one ``back`` before that (its plan settled too), the
next iteration repeats the plans remembered for it, those of the iteration ``back`` − 1 before it. Each of
its launches demands its missing blocks and makes each move remembered at its place (but the demands)
that still applies, in order: a prefetch or population of a block neither resident nor mapped from the
host, memory now, while fewer blocks are resident than the capacity holds; an eviction, discard or
mapping as it leaves of a resident block the launch does not use (mapped only if not dead); a mapping
from the host of a block neither resident nor mapped, memory and not dead; a block given back that is
still mapped. Whether a block moves with a copy or without (``evict`` or ``discard``, ``prefetch`` or
``populate``) is decided again from its deadness now. Then, while more blocks are resident than the
capacity holds, the driver's rule (least recently migrated, dead blocks first with invalidation) takes
victims among the blocks the launch does not use. A launch counts as repeated where its execution ID
and blocks equal those remembered at its place; one that differs (a tensor the caching allocator placed
elsewhere) still makes the remembered moves, which bring in what later launches use. A launch past the
remembered ones only demands its missing blocks and keeps the capacity. Repeated iterations skip the
predictor, the replacement rule's bookkeeping and host mapping's counts (they stay as the last
iteration decided in full left them, and start an iteration again where one is decided in full). A
repeated iteration is recorded with the remembered plan at each place (the moves that no longer
applied included), so the plan carries over whole rather than wearing down to the moves still made; at
its end it is judged as any other: whether the next one repeats.

**Waking** (every mode): the engine starts asleep (deepum.specs.sleep) and the policy sees no launch
until it wakes; ``wake`` then makes every block of the live managed segments resident and touched,
in ascending order, without a move (which of them the GPU touched meanwhile is not known).

**Confidence** (deepum): the window is trusted (it protects its blocks in step 4 and is prefetched in
step 5, or the schedule is followed) only while the predictor is confident: at least ``confident_hits``
of the last CONFIDENCE_LAUNCHES launches under pressure were kernel hits (the window had foreseen them).
Until then nothing is prefetched but the kernel's own blocks (the demand prefetch) and the victims are
the replacement rule's among the blocks the running kernel does not use; the policy keeps learning.

Replacement rules: "next_use" (deepum.specs.next_use, one dead-block look-ahead) and "lru" (least
recently migrated; a dead block among the first LRU_DEAD_SEARCH candidates goes first).

**Warm start** (deepum): ``save_state`` gives what the policy has learned (the correlation tables, the
remembered iterations of next-use eviction and the schedule, and the blocks mapped from the host, in
deepum.specs.warm_state's layout) and ``load_state`` gives it to a policy before its first launch. Once
the state is kept, its mapped blocks join the next iteration's host mapping where they exist and are not
dead: the run's own first iteration allocates and initializes the optimizer's state, so its uses there
are not brief. The loaded state is on trial: the policy is under pressure from the first launch (the run
that learned it was), and at the end of each of the first WARM_START_TRIAL iterations the distinct
execution IDs it launched are compared with those the state holds (its tables' and its remembered
iterations'): it is kept once at least WARM_START_OVERLAP of them are known, and forgotten if no trial
iteration reaches that: the policy then learns afresh (the resident blocks stay, known to the new
replacement rule).
"""
from __future__ import annotations

from collections import Counter, OrderedDict, deque
from typing import Callable, NamedTuple

from ..config import DeepUMConfig
from .next_use import NextUseEviction
from .plan_records import PlanRecords
from .predictor import Predictor
from .schedule import Schedule
from .warm_state import VERSION, StateReader, StateWriter

MODES = ("um", "advise", "deepum")
"""Modes of the policy (the oracle, offline only, is native: it needs the trace's future)."""

LRU_DEAD_SEARCH = 64
"""LRU eviction: candidates searched for a dead block (it leaves without a copy) before the first."""

FORESEEN_DEAD_SEARCH = 1
"""Eviction by next use: candidates searched for a dead block."""

LONGEST_ITERATION = 1 << 16
"""Launches after which, with no iteration mark, the replacement rule starts an iteration of its own
(its history of uses stays bounded under inference or a custom optimizer)."""

CONFIDENCE_LAUNCHES = 32
"""Launches under pressure over which the predictor's kernel hits are counted for its confidence."""

WARM_START_OVERLAP = 0.5
"""Share of the distinct execution IDs launched in an iteration that a loaded state must know, in one of
the first WARM_START_TRIAL iterations (the first may be unlike the rest: optimizer state is allocated at
its end, and a state remembers the last iterations)."""
WARM_START_TRIAL = 2

WARM_START_SETTINGS = ("exec_ids", "exec_records", "block_rows", "block_ways", "block_successors",
                       "foresight_iterations", "eviction", "schedule", "schedule_accesses")
"""The settings a saved state's shape depends on, in its header; a state loads only under the same."""


class LaunchPlan(NamedTuple):
    demand_prefetch: bool  # the "demand" blocks are prefetched just before the kernel
    moves: list            # (move, block) in decision order; move in demand, evict, discard, prefetch, populate,
                           # map_host, map_gpu


class Policy:
    """The policy over a GPU of `capacity_blocks` blocks; `dead(block)` says whether no live allocation
    overlaps a block (it could move without a copy), `exists(block)` whether it is memory now (a loaded
    state names blocks of the run that learned it, some not allocated yet in this one: only existing
    blocks are prefetched or mapped from the host)."""

    def __init__(self, mode: str, capacity_blocks: int, config: DeepUMConfig, dead: Callable[[int], bool],
                 exists: Callable[[int], bool] = lambda block: True):
        if mode not in MODES:
            raise ValueError(f"unknown policy mode {mode!r}; choose one of {', '.join(MODES)}")
        if capacity_blocks < 1:
            raise ValueError("capacity must hold at least one block")
        self.mode, self.capacity, self.config, self._dead, self._exists = mode, capacity_blocks, config, dead, exists
        self._predictor = self._next_use = self._schedule = None
        if mode == "deepum":
            self._learn_afresh()
        # trial: (launched, known) of each iteration judged, in order
        self.warm_start = {"state": "cold", "iterations": 0, "launched": 0, "known": 0, "trial": []}
        self._warm_known: set[int] = set()     # on trial: the execution IDs the loaded state knows
        self._warm_launched: set[int] = set()  # on trial: the distinct execution IDs launched
        self._migrated: OrderedDict[int, None] = OrderedDict()  # resident blocks, least recently migrated first
        self._protect: Counter[int] = Counter()
        self._used_by: dict[int, int] = {}
        self._touched_in: dict[int, int] = {}
        self._window: deque[tuple[int, ...]] = deque()
        self._issued = 0
        self._launch = self._iteration = self._touched_this_iteration = self.peak_resident_blocks = 0
        self._predicted = self._confident = False
        self._recent_hits: deque[bool] = deque(maxlen=CONFIDENCE_LAUNCHES)  # kernel hit, per launch under pressure
        self._foresight_start = 1  # launch at which the replacement rule's iteration began
        self._moves: list = []
        self._host_mapped: set[int] = set()  # blocks mapped from the host (host mapping)
        self._map_when_evicted: list[int] = []  # chosen for host mapping while resident, ascending
        self._loaded_mapped: list[int] = []  # a loaded state's mapped blocks, until mapped once it is kept
        self._map_at_next_launch = False     # an iteration started: host mapping decides at its first launch
        repeats = (mode == "deepum" and config.repeat_plans_percent > 0 and not config.schedule
                   and (config.prefetch or config.pre_evict))
        self._plans = PlanRecords(config.repeat_plans_percent) if repeats else None
        self._repeating: list | None = None  # the remembered iteration this one repeats (repeat_plans_percent)
        self.repeated_launches = 0  # launches of repeated iterations that matched their place

    # ----------------------------------------------------------------------------------- events
    def on_launch(self, exec_id: int, blocks, indexed: bool = False, fill: bool = False, fresh=()) -> LaunchPlan:
        """A kernel with `exec_id` launches and uses `blocks` (each once); `indexed`: it reaches them
        through an index (deepum.specs.indexed_kernels); `fill`: it fills a tensor with one value
        (deepum.specs.fill_kernels); `fresh`: those of `blocks` that received memory allocated since
        the launch before."""
        self._moves = []
        self._launch += 1
        if self._repeating is not None:
            remembered = self._repeat(exec_id, blocks)
            self.peak_resident_blocks = max(self.peak_resident_blocks, len(self._migrated))
            self._plans.record(exec_id, blocks, self._moves if remembered is None else remembered)
            return LaunchPlan(self.config.prefetch and self.config.learn_from == "accesses", self._moves)
        on_trial = self.warm_start["state"] == "on_trial"
        if (self._next_use or self._schedule or on_trial) and self._launch - self._foresight_start >= LONGEST_ITERATION:
            self._start_foresight(self._launch)
        if self._map_at_next_launch:
            self._map_at_next_launch = False
            self._map_from_host()
        if on_trial and exec_id not in self._warm_launched:
            self._warm_launched.add(exec_id)
            self.warm_start["launched"] += 1
            self.warm_start["known"] += exec_id in self._warm_known
        if self._next_use:
            self._next_use.launch(self._launch, exec_id, indexed)
        step = self._schedule.launch(exec_id, blocks, self._migrated) if self._schedule else None
        missing = []
        for b in blocks:
            self._use(b)
            if b not in self._migrated and b not in self._host_mapped:
                missing.append(b)
            if self._next_use:
                self._next_use.use(b, self._launch, b in self._migrated)
                self._next_use.count_use(b, self._launch, b in fresh, fill)
        for b in missing:
            self._arrive(b)
            self._moves.append(("demand", b))
        pressure = self._under_pressure()
        self._predicted = self._predictor is not None and pressure
        if self._predicted:
            self._predict(exec_id, blocks)
        self._confident = self._predicted and sum(self._recent_hits) >= self.config.confident_hits
        prefetching = self._predicted and self.config.prefetch
        demand_prefetch = ((prefetching and self.config.learn_from == "accesses")
                           or (self.mode == "advise" and pressure))
        trusting = prefetching and self._confident
        following = trusting and step is not None
        if following:
            for move in step:
                if move.victim is not None and move.victim in self._migrated and self._used_by.get(move.victim) != self._launch:
                    self._evict(move.victim)
        while len(self._migrated) > self.capacity:
            victim = self._victim(0)
            if victim is None:
                break
            self._evict(victim)
        if following:
            self._follow(step)
        elif trusting and self._prefetches_due():
            self._plan_prefetches()
        self.peak_resident_blocks = max(self.peak_resident_blocks, len(self._migrated))
        if self._plans is not None:
            self._plans.record(exec_id, blocks, self._moves)
        return LaunchPlan(demand_prefetch, self._moves)

    def wake(self, blocks) -> None:
        """The engine wakes (deepum.specs.sleep): `blocks`, every block of the live managed segments in
        ascending order, become resident and touched, without a move; a block mapped from the host
        stays mapped (its pages are on the host)."""
        for b in blocks:
            self._used_by.setdefault(b, self._launch)
            if b not in self._migrated and b not in self._host_mapped:
                self._arrive(b, self._launch + 1)  # as of the next launch, which may start an iteration

    def learn_fault(self, block: int) -> None:
        """learn_from "faults": the kernel of the last launch faulted on `block`."""
        if self._predicted and self.config.learn_from == "faults":
            self._predictor.on_fault(block)

    def next_iteration(self) -> int:
        """A new iteration starts with the next launch; returns the blocks the ending one touched."""
        touched, self._touched_this_iteration = self._touched_this_iteration, 0
        self._iteration += 1
        if self._plans is not None:
            repeated = self._plans.end_iteration()
            self._repeating = repeated if self._under_pressure() and self.warm_start["state"] != "on_trial" else None
        if self._repeating is None:
            self._start_foresight(self._launch + 1)
        else:  # the learners start the iteration only if it stops repeating
            self._predicted = False
            self._foresight_start = self._launch + 1
        return touched

    def release(self, block: int) -> None:
        """The block's memory went back to the system (its segment was freed)."""
        self._migrated.pop(block, None)
        self._host_mapped.discard(block)
        if block in self._map_when_evicted:
            self._map_when_evicted.remove(block)

    def resident(self, block: int) -> bool:
        return block in self._migrated

    def host_mapped(self, block: int) -> bool:
        return block in self._host_mapped

    @property
    def resident_blocks(self) -> int:
        return len(self._migrated)

    # ----------------------------------------------------------------------------------- warm start
    def save_state(self) -> bytes:
        """What deepum has learned, in deepum.specs.warm_state's layout."""
        self._check_learns()
        w = StateWriter()
        w.word(VERSION)
        for word in self._settings():
            w.word(word)
        self._predictor.tables.save(w)
        for learner in (self._next_use, self._schedule):
            if learner:
                learner.save(w)
        w.sequence(sorted(self._host_mapped | set(self._map_when_evicted) | set(self._loaded_mapped)))
        return w.bytes()

    def load_state(self, data: bytes) -> None:
        """Loads save_state()'s bytes before the first launch; ValueError (one line) for a state that is
        corrupt, of another version or saved under other settings, and nothing is loaded."""
        self._check_learns()
        if self._launch or self.warm_start["state"] != "cold":
            raise RuntimeError("a learned state loads once, before the first launch")
        try:
            r = StateReader(data)
            r.expect(VERSION, "format version")
            for word, name in zip(self._settings(), WARM_START_SETTINGS):
                r.expect(word, name)
            for learner in (self._predictor.tables, self._next_use, self._schedule):
                if learner:
                    learner.load(r)
            self._loaded_mapped = [r.block() for _ in range(r.count(None, 1, "mapped blocks"))]
            r.finish()
        except ValueError:
            self._learn_afresh()
            raise
        self._warm_known = set(self._predictor.tables.tracked_exec_ids())
        if self._next_use:
            self._warm_known.update(self._next_use.remembered_exec_ids())
        self.warm_start["state"] = "on_trial"

    def _learn_afresh(self) -> None:
        """deepum's learners, empty: the correlation predictor, next-use eviction (with pre-eviction)
        and the schedule (when switched on)."""
        config = self.config
        self._loaded_mapped = []
        self._predictor = Predictor(config)
        if config.pre_evict and config.eviction == "next_use":
            self._next_use = NextUseEviction(config.foresight_iterations)
        if config.schedule:
            self._schedule = Schedule(self.capacity, config.schedule_ahead, config.schedule_accesses,
                                      config.foresight_iterations)

    def _check_learns(self) -> None:
        if self.mode != "deepum":
            raise RuntimeError("only the deepum policy learns a state")

    def _settings(self) -> tuple[int, ...]:
        c = self.config
        return (c.exec_ids, c.exec_records, c.block_rows, c.block_ways, c.block_successors, c.foresight_iterations,
                int(self._next_use is not None), int(self._schedule is not None),
                c.schedule_accesses if c.schedule else 0)

    def _judge_warm_start(self) -> None:
        """The end of an iteration on trial: the state is kept if it knows enough of the execution IDs
        launched, forgotten after the last trial iteration, else still on trial."""
        warm = self.warm_start
        if not warm["launched"]:
            return
        warm["iterations"] += 1
        warm["trial"].append((warm["launched"], warm["known"]))
        kept = warm["known"] >= WARM_START_OVERLAP * warm["launched"]
        if not kept and warm["iterations"] < WARM_START_TRIAL:
            self._warm_launched.clear()
            warm["launched"] = warm["known"] = 0
            return
        warm["state"] = "kept" if kept else "forgotten"
        self._warm_known, self._warm_launched = set(), set()
        if kept:
            return
        self._learn_afresh()
        self._window.clear()
        self._protect.clear()
        self._issued = 0
        if self._next_use:
            for b in self._migrated:
                self._next_use.arrive(b, self._launch)

    # ----------------------------------------------------------------------------------- decisions
    def _predict(self, exec_id: int, blocks) -> None:
        hits = self._predictor.kernel_hits
        change = self._predictor.on_kernel(exec_id)
        self._recent_hits.append(self._predictor.kernel_hits > hits)
        for _ in range(change.popped):
            self._protect.subtract(self._window.popleft())
        self._issued = max(0, self._issued - change.popped)
        window = self._predictor.window
        for entry in window[len(window) - change.pushed:]:
            self._protect.update(entry.blocks)
            self._window.append(entry.blocks)
        if self.config.learn_from == "accesses":
            for b in blocks:
                self._predictor.on_fault(b)

    def _use(self, block: int) -> None:
        """A block the running launch uses: used last by this launch and touched in this iteration."""
        self._used_by[block] = self._launch
        if self._touched_in.get(block) != self._iteration:
            self._touched_in[block] = self._iteration
            self._touched_this_iteration += 1

    def _repeat(self, exec_id: int, blocks) -> tuple | None:
        """A launch of a repeated iteration: its missing blocks demanded, each move remembered at its
        place that still applies made, room kept; nothing is predicted. Returns the moves remembered at
        its place (the plan this place keeps), None past the remembered launches."""
        self._demand(blocks)
        place = self._plans.place()
        moves = None
        if place < len(self._repeating):
            recorded_id, recorded_blocks, moves = self._repeating[place]
            self.repeated_launches += recorded_id == exec_id and recorded_blocks == tuple(blocks)
            for move, b in moves:
                self._replay(move, b)
        self._keep_capacity()
        return moves

    def _demand(self, blocks) -> None:
        for b in blocks:
            self._use(b)
        for b in [b for b in blocks if b not in self._migrated and b not in self._host_mapped]:
            self._arrive(b)
            self._moves.append(("demand", b))

    def _keep_capacity(self) -> None:
        """The driver's rule (dead blocks first with invalidation) takes victims among the blocks the
        launch does not use while more are resident than the capacity holds."""
        dead = (lambda b: self._dead(b)) if self._invalidates() else (lambda b: False)
        while len(self._migrated) > self.capacity:
            victim = self._lru_victim(self._may_go(False), dead)
            if victim is None:
                break
            self._evict(victim)

    def _replay(self, move: str, b: int) -> None:
        """One remembered move, made if it still applies (see Repeated plans), copied or not as the
        block's deadness is now."""
        if move == "demand":
            return
        if move in ("prefetch", "populate"):
            if (b in self._migrated or b in self._host_mapped or not self._exists(b)
                    or len(self._migrated) >= self.capacity):
                return
            self._arrive(b)
            move = "populate" if self._invalidates() and self._dead(b) else "prefetch"
        elif move == "map_gpu":
            if b not in self._host_mapped:
                return
            self._host_mapped.discard(b)
        elif b not in self._migrated:  # mapped from the host
            if b in self._host_mapped or not self._exists(b) or self._dead(b):
                return
            self._host_mapped.add(b)
            move = "map_host"
        else:  # it leaves: evicted, discarded, or mapped from the host as it leaves
            if self._used_by.get(b) == self._launch:
                return
            del self._migrated[b]
            if b in self._map_when_evicted:
                self._map_when_evicted.remove(b)
            if move == "map_host" and not self._dead(b):
                self._host_mapped.add(b)
            else:
                move = "discard" if self._invalidates() and self._dead(b) else "evict"
        self._moves.append((move, b))

    def _start_foresight(self, first: int) -> None:
        """The replacement rule, the schedule and the predictor start an iteration at launch `first`."""
        if self.warm_start["state"] == "on_trial":
            self._judge_warm_start()
        if self._next_use:
            self._next_use.start_iteration(first)
        if self._schedule:
            self._schedule.start_iteration()
        if self._predictor:
            self._predictor.start_iteration()
        self._foresight_start = first
        self._map_at_next_launch = True

    def _under_pressure(self) -> bool:
        """The blocks touched so far exceed the capacity, or a loaded state says they will."""
        return len(self._used_by) > self.capacity or self.warm_start["state"] in ("on_trial", "kept")

    def _map_from_host(self) -> None:
        """Host mapping: the blocks the last iteration used briefly are mapped from the host, those
        mapped that no longer qualify migrate again; a loaded state's mapped blocks join the first
        decision after it is kept."""
        loaded = []
        if self.warm_start["state"] != "on_trial":
            loaded, self._loaded_mapped = self._loaded_mapped, []
        if not (self._next_use and self.config.host_map_uses and self._under_pressure()):
            return
        brief = self._next_use.short_lived(self.config.host_map_uses, self.config.host_map_span_percent,
                                           self.config.host_map_indexed)
        chosen = {b for b in [*brief, *loaded] if self._exists(b) and not self._dead(b)}
        chosen -= self._kept_migrated(chosen)
        for b in sorted(self._host_mapped - chosen):
            self._host_mapped.discard(b)
            self._moves.append(("map_gpu", b))
        self._map_when_evicted = sorted(b for b in chosen - self._host_mapped if b in self._migrated)
        for b in sorted(chosen - self._host_mapped - set(self._map_when_evicted)):
            self._host_mapped.add(b)
            self._moves.append(("map_host", b))

    def _kept_migrated(self, chosen: set[int]) -> set[int]:
        """The blocks host mapping chose that stay migrated (``host_map_keep_uses``): those the last
        iteration went over in at least that many passes (NextUseEviction.passes), most passes first
        (ties: ascending), as many as the capacity holds beside the other blocks used within the chosen
        blocks' span."""
        least = self.config.host_map_keep_uses
        if not least:
            return set()
        room = self.capacity - self._next_use.used_beside(chosen)
        passes = {b: self._next_use.passes(b) for b in chosen}
        ranked = sorted((b for b in chosen if passes[b] >= least), key=lambda b: (-passes[b], b))
        return set(ranked[:max(room, 0)])

    def _follow(self, step) -> None:
        for move in step:
            if (move.lead == 0 or move.block in self._migrated or move.block in self._host_mapped
                    or not self._exists(move.block)):
                continue
            if len(self._migrated) >= self.capacity:
                victim = self._victim(self._launch + move.lead)
                if victim is None:
                    return
                self._evict(victim)
            self._arrive(move.block)
            self._moves.append(("populate" if self._invalidates() and self._dead(move.block) else "prefetch", move.block))

    def _prefetches_due(self) -> bool:
        lookahead = self.config.lookahead
        return self._issued + min(self.config.prefetch_batch, lookahead) <= lookahead + 1

    def _plan_prefetches(self) -> None:
        while self._issued < len(self._window):
            entry, complete = [], True
            for b in self._window[self._issued]:
                if b in self._migrated or b in self._host_mapped or not self._exists(b):
                    continue
                if len(self._migrated) >= self.capacity:
                    far = self._far(b)
                    if far and self.config.far_prefetches == "skip":
                        continue
                    victim = self._victim(self._launch + self._issued + 1)
                    if far and victim is not None and not (self._invalidates() and self._dead(victim)):
                        self._next_use.spare(victim, self._launch)  # dead_only: the victim stays
                        victim = None
                    if victim is None:
                        complete = False
                        break
                    self._evict(victim)
                self._arrive(b)
                entry.append(("populate" if self._invalidates() and self._dead(b) else "prefetch", b))
            self._moves.extend(sorted(entry, key=lambda move: move[1]))
            if not complete:
                return
            self._issued += 1

    def _far(self, block: int) -> bool:
        """Whether ``far_prefetches`` holds `block` back: next-use foresight needs it only beyond the window."""
        return (self.config.far_prefetches != "evict" and self._next_use is not None
                and self._next_use.foresee(block, self._launch) > self._launch + self.config.lookahead + 1)

    def _victim(self, need_at: int) -> int | None:
        """The replacement rule's victim if it is dead (it leaves without a copy), else a block waiting to
        be mapped from the host (its next use reads it over the link), else the rule's."""
        waiting = next((b for b in self._map_when_evicted if self._used_by.get(b) != self._launch), None)
        chosen = self._ruled_victim(need_at)
        if waiting is None or (chosen is not None and self._invalidates() and self._dead(chosen)):
            return chosen
        if chosen is not None:
            self._next_use.spare(chosen, self._launch)
        return waiting

    def _ruled_victim(self, need_at: int) -> int | None:
        sparing = self.mode == "deepum" and self.config.pre_evict
        may_go = self._may_go(sparing and self._confident)
        dead = (lambda b: self._dead(b)) if self._invalidates() else (lambda b: False)
        if sparing and self._next_use:
            chosen = self._next_use.victim(self._launch, self.resident, may_go, dead, FORESEEN_DEAD_SEARCH, need_at)
        else:
            chosen = self._lru_victim(may_go, dead)
        if chosen is not None or need_at > 0 or not sparing:
            return chosen
        return self._lru_victim(self._may_go(False), lambda b: False)  # the driver's rule

    def _may_go(self, sparing: bool) -> Callable[[int], bool]:
        return lambda b: self._used_by.get(b) != self._launch and not (sparing and self._protect[b] > 0)

    def _lru_victim(self, may_go, dead) -> int | None:
        first, searched = None, 0
        for b in self._migrated:
            if not may_go(b):
                continue
            if first is None:
                first = b
            if dead(b):
                return b
            searched += 1
            if searched == LRU_DEAD_SEARCH:
                break
        return first

    def _invalidates(self) -> bool:
        return self.mode == "deepum" and self.config.invalidate

    def _arrive(self, block: int, launch: int | None = None) -> None:
        self._migrated[block] = None
        if self._next_use:
            self._next_use.arrive(block, self._launch if launch is None else launch)

    def _evict(self, block: int) -> None:
        del self._migrated[block]
        if block in self._map_when_evicted:
            self._map_when_evicted.remove(block)
            if not self._dead(block):
                self._host_mapped.add(block)
                self._moves.append(("map_host", block))
                return
        self._moves.append(("discard" if self._invalidates() and self._dead(block) else "evict", block))
