"""torch.profiler beside a session. The profiler takes CUPTI's activity buffers for its own records
while it runs; when it stops, the session takes them back and enables the unified-memory counters
again, so that the fault counters and learning from faults go on. If CUPTI refuses, a warning says
that the fault counters have stopped, rather than letting them freeze silently."""
from __future__ import annotations

import functools
import warnings


class ProfilerGuard:
    def __init__(self, torch, engine):
        self.owner = torch.autograd.profiler.profile
        self.engine = engine
        self.original = None

    def install(self) -> None:
        original = self.original = self.owner.__exit__
        engine = self.engine

        @functools.wraps(original)
        def exit_and_restore(profile, *args):
            try:
                return original(profile, *args)
            finally:
                if not engine.restore_cupti():
                    warnings.warn("deepum: after torch.profiler, CUPTI refused to give the unified-memory counters "
                                  "back: GPU page-fault counts (and learning from faults) stop here",
                                  RuntimeWarning, stacklevel=2)

        self.owner.__exit__ = exit_and_restore

    def remove(self) -> None:
        if self.original is not None:
            self.owner.__exit__ = self.original
            self.original = None
