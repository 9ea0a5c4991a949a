"""Processes racing to claim the same ids: the harness every store's race shares, and each store's racer.

A racer runs in a spawned process, which imports the racer's module: this one, free of pytest and
of the test servers' scripts (a second of a fresh process's start on PostgreSQL, half that on
Redis), and its store's guard module, which its ``open_guard`` names.
"""

from __future__ import annotations

import multiprocessing
import queue
import time
from collections.abc import Callable
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from typing import Protocol

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


class RacingGuard(Protocol):
    """What a racer does with its store's guard."""

    def begin(self, now: int | None = None) -> int: ...
    def claim(self, claimed: ClaimId, expires_at: int, now: int, /) -> bool: ...
    def close(self) -> None: ...


def claim_all(
    open_guard: Callable[[], RacingGuard],
    now: int,
    ids: list[ClaimId],
    start: Barrier,
    results: Queue[list[ClaimId] | str],
) -> None:
    """A store's racer: open its guard (``open_guard``: a store's ``from_url``, partially applied, so
    that this process imports that store's guard and nothing of the tests'), begin it at once with the
    other racers (on a store with no tables yet, each finds none), claim every id, and report the ones
    this process won, or a line naming its error."""
    guard = open_guard()
    try:
        start.wait(timeout=60)
        guard.begin(now - 60)
        start.wait(timeout=60)
        results.put([claimed for claimed in ids if guard.claim(claimed, now + 300, now)])
    except Exception as error:  # reported, so that the test names it
        results.put(f"{type(error).__name__}: {error}")
    finally:
        guard.close()
