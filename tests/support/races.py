"""Processes racing to claim the same ids: the harness every store's race shares."""

from __future__ import annotations

import multiprocessing
import queue
import time
from collections.abc import Callable
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier

from requeststate import ClaimId

Racer = Callable[[list[ClaimId], Barrier, "Queue[list[ClaimId] | str]"], None]
"""A race's worker, run in its own process: claim every id once ``start`` lets it, and put the ids
it won in ``results`` (or a line naming its error). Picklable: a module's function, or a
``functools.partial`` of one."""


def race(racer: Racer, ids: list[ClaimId], *, processes: int, seconds: float) -> list[ClaimId]:
    """Run ``racer`` in each of ``processes`` spawned processes at once; the ids each won, together.

    Half the processes claim in reverse order, so that every id is contested from both ends.
    Fails the test if a worker dies, reports an error, or all do not report within ``seconds``.
    """
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(processes)
    results: Queue[list[ClaimId] | str] = context.Queue()
    workers = [
        context.Process(target=racer, args=(ids if index % 2 == 0 else ids[::-1], start, results))
        for index in range(processes)
    ]
    for worker in workers:
        worker.start()
    won: list[list[ClaimId] | str] = []
    deadline = time.monotonic() + seconds
    try:
        while len(won) < processes and time.monotonic() < deadline:
            try:
                won.append(results.get(timeout=0.2))
            except queue.Empty:
                # A worker that died will never report: fail now, not at the deadline.
                assert all(worker.exitcode in (None, 0) for worker in workers), "a worker process failed"
    finally:
        for worker in workers:
            worker.join(timeout=10)
            if worker.is_alive():
                worker.kill()
    assert len(won) == processes, f"only {len(won)} of {processes} workers reported in {seconds} s"
    assert [worker.exitcode for worker in workers] == [0] * processes
    errors = [report for report in won if isinstance(report, str)]
    assert errors == [], errors
    return [token_id for winner in won if isinstance(winner, list) for token_id in winner]
