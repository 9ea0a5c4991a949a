"""Interleaved timing under a budget: every case is timed in turn, round after round, until time is up.

On a small, shared machine two cases timed seconds apart see different clocks,
caches and neighbours; timed alternately, many rounds each, their medians can be
compared within one run. Each sample is one batch of calls between two readings
of ``time.perf_counter_ns``. The garbage collector stays on, as it is in a
server: a collection that lands in one batch moves that batch, not the median.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, TypeAlias

__all__ = ["MIN_ROUNDS", "Batch", "Timing", "calibrate", "measure", "percentile_us", "repeated", "sample_ns"]

Batch: TypeAlias = Callable[[int], int]
"""Makes ``calls`` calls of one case and returns the nanoseconds they took, preparation not counted."""

MIN_ROUNDS: Final = 5
"""Rounds measured whatever the budget: a median needs a few samples."""
# The rounds the budget is divided into, and what calibrating a case costs, in samples of it.
_TARGET_ROUNDS: Final = 15
_CALIBRATION_SAMPLES: Final = 3
# A sample long enough to dwarf two clock readings and short enough that a guard's
# tokens for one batch stay few (each is minted before its batch).
_MIN_SAMPLE_NS: Final = 200_000
_MAX_SAMPLE_NS: Final = 50_000_000


@dataclass(frozen=True)
class Timing:
    """The per-call times of one case over the rounds of a run, in microseconds."""

    median_us: float
    best_us: float
    calls: int
    """Calls per sample."""
    samples: int

    @property
    def per_second(self) -> float:
        """Calls one core sustains, from the median."""
        return 1e6 / self.median_us


def percentile_us(ordered_ns: Sequence[int], share: float) -> float:
    """The nearest-rank percentile of nanoseconds ``ordered_ns`` (ascending), in µs.

    The smallest value with at least ``share`` of all at or below it.
    """
    return ordered_ns[max(0, math.ceil(share * len(ordered_ns)) - 1)] / 1e3


def repeated(call: Callable[[], object]) -> Batch:
    """The batch that makes the same call ``calls`` times."""

    def batch(calls: int) -> int:
        began = time.perf_counter_ns()
        for _ in range(calls):
            call()
        return time.perf_counter_ns() - began

    return batch


def sample_ns(seconds: float, cases: int) -> int:
    """How long one sample should last for ``cases`` cases to share ``seconds`` over the target rounds."""
    share = seconds * 1e9 / (cases * (_TARGET_ROUNDS + _CALIBRATION_SAMPLES))
    return int(min(max(share, _MIN_SAMPLE_NS), _MAX_SAMPLE_NS))


def calibrate(batch: Batch, target_ns: int) -> int:
    """The number of calls that makes one sample of ``batch`` last at least ``target_ns``.

    Its first calls warm the case up (caches, the first bind tag of an identity).
    """
    calls = 1
    while True:
        elapsed_ns = batch(calls)
        if elapsed_ns >= target_ns:
            return calls
        # Aim 20% past the target from the rate seen so far, growing at least 2x and at most 100x.
        scale = target_ns * 1.2 / elapsed_ns if elapsed_ns > 0 else 100.0
        calls = int(calls * min(max(scale, 2.0), 100.0))


def measure(
    batches: Mapping[str, Batch],
    *,
    seconds: float,
    sample_seconds: float | None = None,
    clock: Callable[[], int] = time.perf_counter_ns,
) -> dict[str, Timing]:
    """Time every case, one sample each per round, until the next round would end past ``seconds``.

    The budget counts from the call, calibration included; at least ``MIN_ROUNDS``
    rounds are measured however long they take. The order rotates by one case each
    round, so that no case always runs right after the same neighbour. A sample
    lasts at least ``sample_seconds``, by default the budget's share (``sample_ns``).
    ``clock`` reads nanoseconds, for the budget only (each batch times itself).
    """
    started = clock()
    deadline = started + seconds * 1e9
    names = list(batches)
    target = sample_ns(seconds, len(names)) if sample_seconds is None else int(sample_seconds * 1e9)
    calls = {name: calibrate(batches[name], target) for name in names}
    per_call_ns: dict[str, list[float]] = {name: [] for name in names}
    rounds = 0
    round_ns = 0
    while rounds < MIN_ROUNDS or clock() + round_ns <= deadline:
        began = clock()
        shift = rounds % len(names)
        for name in names[shift:] + names[:shift]:
            per_call_ns[name].append(batches[name](calls[name]) / calls[name])
        round_ns = clock() - began
        rounds += 1
    return {
        name: Timing(statistics.median(times) / 1e3, min(times) / 1e3, calls[name], len(times))
        for name, times in per_call_ns.items()
    }
