"""Throughput on every core against one core: one process per core, each running rounds for a fixed time.

A round is ``encode`` then ``decode`` of a 64 B state in the ``encrypted`` mode
(the default choice), as in ``cases.round_trip``. Each process is started with
``spawn``, builds its own ``KeyRing`` from the shared secret (a ring refuses to
be pickled), warms up, waits at a barrier so all start together, then counts
rounds until its time is up. Scaling = the processes' summed rounds/s divided
by the rounds/s of one process alone, measured the same way in the same run;
with ``repeats`` the two alternate and the best of each counts, as for timings.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from dataclasses import dataclass
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier

import requeststate as rs

from .cases import make_state, round_trip

__all__ = ["Scaling", "available_cores", "measure_scaling", "summed_rate"]

_BATCH = 50
_WARM_UP_ROUNDS = 500


@dataclass(frozen=True)
class Scaling:
    """Rounds per second of one process and of one process per core."""

    processes: int
    single_rounds_per_s: float
    all_rounds_per_s: float
    seconds: float

    @property
    def factor(self) -> float:
        """All cores' rounds/s over one core's."""
        return self.all_rounds_per_s / self.single_rounds_per_s


def available_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _worker(secret: bytes, seconds: float, start: Barrier, results: Queue[float]) -> None:
    one_round = round_trip(make_state(64), rs.KeyRing(secret), rs.Mode.ENCRYPTED)
    for _ in range(_WARM_UP_ROUNDS):
        one_round()
    start.wait()
    count = 0
    began = time.perf_counter()
    deadline = began + seconds
    while (now := time.perf_counter()) < deadline:
        for _ in range(_BATCH):
            one_round()
        count += _BATCH
    results.put(count / (now - began))


def summed_rate(processes: int, seconds: float) -> float:
    """Summed rounds/s of ``processes`` processes running side by side for ``seconds``."""
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(processes)
    results: Queue[float] = context.Queue()
    secret = os.urandom(32)
    workers = [
        context.Process(target=_worker, args=(secret, seconds, start, results), daemon=True)
        for _ in range(processes)
    ]
    for worker in workers:
        worker.start()
    rates = [results.get(timeout=seconds + 120) for _ in workers]
    for worker in workers:
        worker.join()
    return sum(rates)


def measure_scaling(seconds: float, *, repeats: int = 1, processes: int | None = None) -> Scaling:
    """One process, then one per core (or ``processes``), each for ``seconds``, ``repeats`` times."""
    count = available_cores() if processes is None else processes
    single = all_cores = 0.0
    for _ in range(repeats):
        single = max(single, summed_rate(1, seconds))
        all_cores = max(all_cores, summed_rate(count, seconds))
    return Scaling(count, single, all_cores, seconds)
