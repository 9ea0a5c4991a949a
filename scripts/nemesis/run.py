"""One topology under the nemesis: its workers started, faults injected at random until the end, the
history gathered."""

from __future__ import annotations

import multiprocessing
import random
import signal
import time
from collections.abc import Callable, Sequence
from multiprocessing.process import BaseProcess
from multiprocessing.sharedctypes import Synchronized
from typing import Any

import requeststate as rs
from requeststate import DEFAULT_CLOCK_SKEW
from scripts.nemesis.checker import Run
from scripts.nemesis.history import Fault, Redemption
from scripts.nemesis.topologies import FAULTS, OWN_FAULTS_FIRST, SETUPS, Target, signal_process
from scripts.nemesis.workers import (
    KEY,
    MISMATCHED,
    OFFSET,
    TTL,
    guard_for,
    mint_token,
    record_redemption,
    worker,
)

__all__ = ["WORKER_FAULTS", "run"]

# The faults every topology gets, which run() injects itself: they act on the workers.
WORKER_FAULTS = ("clock", "paused-verifier", "mismatched-verifier")
# A paused verifier stays stopped this long past clock_skew: its clock is then that stale.
STALE_PAST_SKEW = (1.0, 3.0)


def run(topology: str, seconds: float, workers: int, seed: int, say: Callable[[str], None]) -> Run:
    """Run one topology for ``seconds`` under the nemesis; its history and faults."""
    chance = random.Random(f"{seed}:{topology}")
    context = multiprocessing.get_context("spawn")
    with SETUPS[topology]() as target:
        offsets = [context.Value("d", chance.uniform(-OFFSET, OFFSET)) for _ in range(workers)]
        frozen = [context.Value("d", 0.0) for _ in range(workers)]
        serving = context.Value("i", 0)
        shared: Any = context.Queue(maxsize=2_000)
        history: Any = context.Queue()
        began = time.time()
        deadline = began + seconds + 2 + DEFAULT_CLOCK_SKEW  # the workers' start-up
        processes = [
            context.Process(
                target=worker,
                args=(
                    index,
                    target.url,
                    deadline,
                    offsets[index],
                    frozen[index],
                    serving,
                    shared,
                    history,
                    seed + index,
                ),
                daemon=True,
            )
            for index in range(workers)
        ]
        for process in processes:
            process.start()
        faults: list[Fault] = []
        mismatched: list[Redemption] = []
        # The workers begin the store's memory, and serve once it accepts their tokens: the faults
        # begin then (a spawned worker's imports alone take seconds on a loaded machine).
        starting = time.monotonic()
        while serving.value < workers and time.monotonic() - starting < 60:
            time.sleep(0.1)
        time.sleep(1.0)
        kinds = FAULTS[topology] + WORKER_FAULTS
        leading = list(FAULTS[topology]) if topology in OWN_FAULTS_FIRST else []
        while time.time() + 6 + DEFAULT_CLOCK_SKEW + STALE_PAST_SKEW[1] < deadline:
            in_turn = bool(leading)
            kind = leading.pop(0) if in_turn else chance.choice(kinds)
            fault = Fault(kind, time.time())
            if kind == "clock":
                offsets[chance.randrange(workers)].value = chance.uniform(-OFFSET, OFFSET)
            elif kind == "paused-verifier":
                fault.lost = _paused_verifier(target, processes, offsets, frozen, chance)
            elif kind == "mismatched-verifier":
                mismatched += _mismatched_verifier(target, chance)
            else:
                fault.lost = target.inject[kind](chance)
            fault.ended = time.time()
            faults.append(fault)
            say(f"  {topology}: {kind} at +{fault.began - began:.1f} s ({fault.ended - fault.began:.1f} s)")
            # Apart by more than the window a loss opens (clock_skew), so that each loss's resume
            # time is its own; now and then sooner, so that faults also overlap. The leading faults
            # just past that window, so that a 40 s run has each.
            gap = DEFAULT_CLOCK_SKEW + 2.0 if in_turn else chance.uniform(2.0, 3.0 * DEFAULT_CLOCK_SKEW)
            time.sleep(min(gap, max(0.0, deadline - time.time())))  # none past the workers' end
        records: list[Redemption] = []
        for _ in processes:
            records += history.get(timeout=60)
        for process in processes:
            process.join(timeout=10)
        shared.cancel_join_thread()
    return Run(topology, time.time() - began, records, faults, mismatched)


def _paused_verifier(
    target: Target,
    processes: Sequence[BaseProcess],
    offsets: list[Synchronized[float]],
    frozen: list[Synchronized[float]],
    chance: random.Random,
) -> float:
    """A worker stopped right after it read its clock, resumed as the first to claim after a ``FLUSHALL``.

    While it is stopped, the others mint and redeem for longer than ``clock_skew``: the tokens
    a marker dated by its stale clock would take for minted after the loss. The time of the flush.
    """
    victim = chance.randrange(len(processes))
    frozen[victim].value = time.time() + offsets[victim].value
    signal_process(processes[victim], signal.SIGSTOP)
    others = [process for index, process in enumerate(processes) if index != victim]
    try:
        time.sleep(DEFAULT_CLOCK_SKEW + chance.uniform(*STALE_PAST_SKEW))
        for process in others:
            signal_process(process, signal.SIGSTOP)
        lost = target.inject["flushall"](chance)
        assert lost is not None
    finally:
        signal_process(processes[victim], signal.SIGCONT)
        time.sleep(0.5)  # its next claims, with the clock it read before it stopped, come first
        for process in others:
            signal_process(process, signal.SIGCONT)
    time.sleep(1.0)
    frozen[victim].value = 0.0
    return lost


def _mismatched_verifier(target: Target, chance: random.Random) -> list[Redemption]:
    """For 1 to 3 s, a verifier with another leeway (or clock_skew) than the namespace's mints and redeems."""
    leeway, skew = (60, DEFAULT_CLOCK_SKEW) if chance.random() < 0.5 else (0, 0)
    guard = guard_for(target.url, clock_skew=skew)
    codec = rs.Codec(KEY, mode="encrypted", ttl=TTL, leeway=leeway, guard=guard)
    records: list[Redemption] = []
    end = time.time() + chance.uniform(1.0, 3.0)
    try:
        while time.time() < end:
            minted = time.time()
            token, token_id = mint_token(codec, MISMATCHED, len(records))
            record_redemption(codec, records, MISMATCHED, token, token_id, minted, first=True)
            time.sleep(chance.random() * 0.004)
    finally:
        guard.close()
    return records
