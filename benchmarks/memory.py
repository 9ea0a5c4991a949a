"""Memory per call, by ``tracemalloc``: what stays allocated after many calls, and the peak of one.

After a warm-up (every cache filled), tracing starts, one call runs, a full
collection empties the free lists, and the traced total is the baseline. Then
``calls`` more calls run and a full collection follows. Growth is the traced
total now minus the baseline: a leak shows as bytes per call. The peak of a
call is the highest traced total during that one call minus the total just
before it: the transient memory a call needs, here the largest over 100 calls.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["MemoryUse", "measure_memory"]

_WARM_UP_CALLS = 1000
_PEAK_CALLS = 100


@dataclass(frozen=True)
class MemoryUse:
    """Traced memory over ``calls`` calls of one operation."""

    calls: int
    growth_bytes: int
    peak_bytes: int
    """The most traced memory one call needed beyond what was allocated before it."""

    @property
    def growth_per_call(self) -> float:
        """Bytes left allocated per call: about 0 unless something leaks."""
        return self.growth_bytes / self.calls


def measure_memory(operation: Callable[[], object], calls: int) -> MemoryUse:
    """Trace ``calls`` calls of ``operation`` after a warm-up."""
    for _ in range(_WARM_UP_CALLS):
        operation()
    tracemalloc.start()
    try:
        operation()
        gc.collect()
        baseline = tracemalloc.get_traced_memory()[0]
        for _ in range(calls):
            operation()
        gc.collect()
        growth = tracemalloc.get_traced_memory()[0] - baseline
        peak = 0
        for _ in range(_PEAK_CALLS):
            before = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            operation()
            peak = max(peak, tracemalloc.get_traced_memory()[1] - before)
    finally:
        tracemalloc.stop()
    return MemoryUse(calls, growth, peak)
