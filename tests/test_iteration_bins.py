"""The fault log's iteration bins (driver_hooks/iteration_bins.hpp): each fault and transfer counts in
the iteration its start time falls in, however late its buffer arrives, so that an iteration mark
needs no flush of CUPTI, and in the totals, which a reset keeps."""
from hypothesis import given, settings, strategies as st

from deepum import _native

KINDS = ("fault_h2d", "prefetch_h2d", "other_h2d", "d2h")
times = st.integers(0, 1_000)
transfer = st.tuples(times, st.integers(1, 50), st.integers(1, 1 << 21), st.sampled_from(KINDS)).map(
    lambda t: (t[0], t[0] + t[1], t[2], t[3]))
event = st.one_of(st.tuples(st.just("mark"), times), st.tuples(st.just("fault"), times, st.integers(1, 9)),
                  st.tuples(st.just("buffer"), st.lists(transfer, max_size=6)))


def union_ns(spans):
    total, until = 0, 0
    for start, end in sorted(spans):
        total += max(0, end - max(start, until))
        until = max(until, end)
    return total


class Model:
    """Bin k: what began at or after mark k - 1 and before mark k; a mark never goes back in time."""

    def __init__(self):
        self.marks, self.rows, self.spans = [], [self.empty()], [{"h2d": [], "d2h": []}]

    @staticmethod
    def empty():
        return {"gpu_page_faults": 0, **{f"{kind}_bytes": 0 for kind in KINDS}}

    def bin(self, t):
        return sum(mark <= t for mark in self.marks)

    def mark(self, t):
        self.marks.append(max([t, *self.marks[-1:]]))
        self.rows.append(self.empty())
        self.spans.append({"h2d": [], "d2h": []})

    def fault(self, t, count):
        self.rows[self.bin(t)]["gpu_page_faults"] += count

    def buffer(self, records):
        for start, end, size, kind in records:
            k = self.bin(start)
            self.rows[k][f"{kind}_bytes"] += size
            self.spans[k]["d2h" if kind == "d2h" else "h2d"].append((start, end))


@settings(max_examples=300, deadline=None)
@given(st.lists(event, max_size=25))
def test_every_fault_and_byte_counts_in_the_iteration_it_began_in(events):
    bins, model = _native.IterationBins(), Model()
    for name, *args in events:
        getattr(bins, "transfers" if name == "buffer" else name)(*args)
        getattr(model, name)(*args)
    figures = bins.figures()
    assert len(figures) == len(model.marks) + 1
    for got, want, spans in zip(figures, model.rows, model.spans):
        assert {key: got[key] for key in want} == want
        # the link's busy time: never more than the union of the bin's transfers
        assert got["h2d_link_busy_ns"] <= union_ns(spans["h2d"])
        assert got["d2h_link_busy_ns"] <= union_ns(spans["d2h"])
    totals = bins.totals()
    for key in Model.empty():
        assert totals[key] == sum(row[key] for row in model.rows)
    every = {direction: [span for spans in model.spans for span in spans[direction]] for direction in ("h2d", "d2h")}
    assert totals["h2d_link_busy_ns"] <= union_ns(every["h2d"])
    assert totals["d2h_link_busy_ns"] <= union_ns(every["d2h"])


@settings(max_examples=200, deadline=None)
@given(st.lists(times, max_size=6), st.lists(transfer, max_size=12))
def test_busy_time_of_one_buffer_is_the_union_of_its_transfers_per_iteration(marks, records):
    bins, model = _native.IterationBins(), Model()
    for t in marks:
        bins.mark(t)
        model.mark(t)
    bins.transfers(records)
    model.buffer(records)
    for got, spans in zip(bins.figures(), model.spans):
        assert got["h2d_link_busy_ns"] == union_ns(spans["h2d"])
        assert got["d2h_link_busy_ns"] == union_ns(spans["d2h"])


@settings(max_examples=200, deadline=None)
@given(st.lists(times, max_size=6), st.lists(st.lists(st.tuples(times, st.integers(1, 50)).map(
    lambda t: (t[0], t[0] + t[1])), max_size=8), max_size=3))
def test_gpu_busy_time_is_the_union_of_the_kernels_that_began_in_the_iteration(marks, buffers):
    bins, model = _native.IterationBins(), Model()
    for t in marks:
        bins.mark(t)
        model.mark(t)
    for spans in buffers:
        bins.kernels(spans)
    by_bin = [[] for _ in model.rows]
    for start, end in (span for spans in buffers for span in spans):
        by_bin[model.bin(start)].append((start, end))
    figures = bins.figures()
    for got in figures:
        assert got["h2d_link_busy_ns"] == got["d2h_link_busy_ns"] == got["gpu_page_faults"] == 0
    # whatever order the buffers come in: exactly the union of each iteration's kernels, and of all
    assert [got["gpu_busy_ns"] for got in figures] == [union_ns(spans) for spans in by_bin]
    assert bins.totals()["gpu_busy_ns"] == union_ns([span for spans in buffers for span in spans])


def test_an_iteration_two_marks_old_counts_a_late_record_only_past_what_it_held():
    bins = _native.IterationBins()
    bins.mark(100)
    bins.kernels([(0, 10), (20, 30)])
    bins.mark(200)
    bins.kernels([(5, 25)])  # one mark later: merged exactly
    assert bins.figures()[0]["gpu_busy_ns"] == 30
    bins.kernels([(40, 60)])
    bins.mark(300)  # two marks later: iteration 0 keeps no runs
    bins.kernels([(30, 50), (70, 80)])  # only what lies past its last run (60) counts
    assert bins.figures()[0]["gpu_busy_ns"] == 30 + 20 + 10
    assert bins.totals()["gpu_busy_ns"] == union_ns([(0, 30), (30, 60), (70, 80)])


def test_the_union_keeps_its_latest_runs_only():
    bins = _native.IterationBins()
    spans = [(10 * i, 10 * i + 5) for i in range(5000)]  # 5,000 disjoint runs, more than are kept
    bins.kernels(spans)
    bins.kernels([(49_985, 49_990)])  # the last gap: among the kept runs, merged exactly
    bins.kernels([(5, 10)])           # the first gap: before the kept runs, forgotten
    assert bins.figures()[0]["gpu_busy_ns"] == 5000 * 5 + 5


def test_one_buffer_of_more_runs_than_are_kept_counts_whole_in_any_order():
    spans = [(10 * i, 10 * i + 5) for i in range(5000)]
    records = [(start, end, 1, "d2h") for start, end in spans]
    bins = _native.IterationBins()
    bins.kernels(list(reversed(spans)))
    bins.transfers(list(reversed(records)))
    assert bins.figures()[0]["gpu_busy_ns"] == bins.figures()[0]["d2h_link_busy_ns"] == 5000 * 5


def test_a_record_at_a_mark_counts_after_it_and_reset_forgets_all():
    bins = _native.IterationBins()
    bins.mark(100)
    bins.fault(99, 1)
    bins.fault(100, 2)
    assert [row["gpu_page_faults"] for row in bins.figures()] == [1, 2]
    bins.reset()
    assert [row["gpu_page_faults"] for row in bins.figures()] == [0]
    assert bins.totals()["gpu_page_faults"] == 3
