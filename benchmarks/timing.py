"""Interleaved micro-timing: every case of a group is timed in turn, round after round.

On a small, noisy machine two cases timed minutes apart see different clocks,
caches and neighbours. Timing a codec and its floor alternately, several rounds
each, and comparing their best times gives ratios that hold within one run.
Each sample is ``timeit.Timer.timeit`` on ``time.perf_counter_ns`` (so it counts
nanoseconds), with the garbage collector off while it runs, as ``timeit`` does.
"""

from __future__ import annotations

import statistics
import time
import timeit
from collections.abc import Callable, Mapping
from dataclasses import dataclass

__all__ = ["Stats", "calibrate", "measure_interleaved"]


@dataclass(frozen=True)
class Stats:
    """The per-call times of one case, in microseconds, over every round of its group."""

    best_us: float
    median_us: float
    number: int
    """Calls per sample, chosen by ``calibrate``."""
    samples: int
    """Samples taken (the rounds of the group)."""

    @property
    def ops_per_s(self) -> float:
        """Sustained calls per second: from the median, not the best."""
        return 1e6 / self.median_us


def calibrate(timer: timeit.Timer, sample_seconds: float) -> int:
    """The number of calls that makes one sample of ``timer`` last at least ``sample_seconds``."""
    target_ns = sample_seconds * 1e9
    number = 1
    while True:
        elapsed_ns = timer.timeit(number)
        if elapsed_ns >= target_ns:
            return number
        # Aim 20% past the target from the rate seen so far, growing at least 2x and at most 100x.
        scale = target_ns * 1.2 / elapsed_ns if elapsed_ns > 0 else 100.0
        number = int(number * min(max(scale, 2.0), 100.0))


def measure_interleaved(
    cases: Mapping[str, Callable[[], object]], *, rounds: int, sample_seconds: float
) -> dict[str, Stats]:
    """Time each case ``rounds`` times, one sample of every case per round.

    The order rotates by one case each round, so no case always runs right
    after the same neighbour.
    """
    names = list(cases)
    timers = {name: timeit.Timer(cases[name], timer=time.perf_counter_ns) for name in names}
    numbers = {name: calibrate(timers[name], sample_seconds) for name in names}
    per_call: dict[str, list[float]] = {name: [] for name in names}
    for round_index in range(rounds):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            per_call[name].append(timers[name].timeit(numbers[name]) / numbers[name] / 1e3)
    return {
        name: Stats(min(times), statistics.median(times), numbers[name], len(times))
        for name, times in per_call.items()
    }
