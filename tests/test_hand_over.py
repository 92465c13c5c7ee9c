"""The worker's hand-over to its pools (driver_hooks/hand_over.hpp), run natively inside a model of the
worker: decisions come in (each a few commands in decision order, some on lanes a pool serves), the
worker takes its queue as a batch and issues it in order, handing the pools' commands over as it
reaches them (Worker::issue). The rule that keeps a pool's move from waiting for a call the worker has
yet to make: no pool ever holds a command decided after a worker command not yet issued; and each pool
gets its commands in decision order."""
from hypothesis import given, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from deepum import _native


class WorkerHandsOverInDecisionOrder(RuleBasedStateMachine):
    """Commands numbered in decision order; `True` for a command a pool serves, `False` for one the
    worker issues itself."""

    def __init__(self):
        super().__init__()
        self.pooled: list[bool] = []  # per command, by number
        self.queue: list[int] = []    # the worker's queue
        self.batch: list[int] = []    # taken by the worker, not yet reached
        self.busy = False
        self.issued: set[int] = set()          # worker commands issued
        self.handed: list[int] = []            # pool commands, in the order pools got them

    @rule(kinds=st.lists(st.booleans(), min_size=1, max_size=6))
    def decide(self, kinds):
        first = len(self.pooled)
        self.pooled += kinds
        numbers = list(range(first, first + len(kinds)))
        now = _native.taken_at_once(kinds, self.busy or bool(self.queue))
        assert 0 <= now <= len(kinds)
        self.handed += numbers[:now]
        self.queue += numbers[now:]

    @precondition(lambda self: not self.busy and self.queue)
    @rule()
    def worker_takes_its_queue(self):
        self.batch, self.queue, self.busy = self.queue, [], True

    @precondition(lambda self: self.batch)
    @rule()
    def worker_reaches_the_next_command(self):
        command = self.batch.pop(0)
        (self.handed.append if self.pooled[command] else self.issued.add)(command)

    @precondition(lambda self: self.busy and not self.batch)
    @rule()
    def worker_is_done_with_its_batch(self):
        self.busy = False

    @invariant()
    def no_pool_command_waits_for_a_worker_call_to_come(self):
        for command in self.handed:
            waiting = [w for w in range(command) if not self.pooled[w] and w not in self.issued]
            assert not waiting, (command, waiting)

    @invariant()
    def pools_get_their_commands_only_in_decision_order(self):
        assert all(self.pooled[command] for command in self.handed)
        assert self.handed == sorted(self.handed)

    @invariant()
    def nothing_is_lost(self):
        waiting = set(self.queue) | set(self.batch)
        assert set(self.handed) | self.issued | waiting == set(range(len(self.pooled)))


TestWorkerHandsOverInDecisionOrder = WorkerHandsOverInDecisionOrder.TestCase


@given(kinds=st.lists(st.booleans(), max_size=8))
def test_an_idle_worker_lets_the_pools_take_every_command_before_its_own_first(kinds):
    expected = kinds.index(False) if False in kinds else len(kinds)
    assert _native.taken_at_once(kinds, False) == expected
    assert _native.taken_at_once(kinds, True) == 0


@given(wait=st.integers(0, 2**40), published=st.integers(0, 2**40))
def test_a_handed_command_waits_only_for_published_work(wait, published):
    kept = _native.published_wait(wait, published)
    assert kept <= published and kept <= wait and kept in (wait, published)
