"""Run every measurement of the benchmark and collect the results (no printing, no files)."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from cryptography.hazmat.backends.openssl import backend as openssl

import requeststate as rs
from requeststate.bench import Timing as Measured
from requeststate.bench import measure, repeated

from .cases import SIZES, codec_cases, make_state, round_trip
from .guards import GuardResults, measure_guards
from .importtime import ImportTime, measure_import
from .memory import MemoryUse, measure_memory
from .multicore import Scaling, available_cores, measure_scaling
from .peers import PEERS, build_peer

__all__ = ["MemoryRow", "Results", "Settings", "Timing", "run"]

_CORE_DISTRIBUTIONS = ("requeststate", "cryptography", "msgspec", "PyNaCl")
_GUARD_DISTRIBUTIONS = ("redis",)


@dataclass(frozen=True)
class Settings:
    """How long and how much to measure."""

    quick: bool
    group_seconds: float
    """The budget of one group of cases, timed in interleaved rounds (``requeststate.bench.measure``)."""
    sample_seconds: float
    """The least duration of one sample."""
    memory_calls: int
    multicore_seconds: float
    multicore_repeats: int
    sizes: tuple[int, ...] = SIZES
    peers: bool = True
    multicore: bool = True
    guards: bool = True
    """Time the replay guards (``guards.py``)."""
    guard_redis: bool = True
    """Include Redis in the guard measurements (a loopback redis-server the run starts and stops)."""
    guard_seconds: float = 2.0
    """The budget of each group of guard cases (``guard_cost``)."""
    guard_memory_ids: int = 100_000
    """Ids a ``MemoryGuard`` holds when its memory is traced (its default capacity)."""
    guard_claim_seconds: float = 0.0
    """Seconds a level of claims under load per Redis setup (``guard_claims``); 0 skips them."""
    import_runs: int = 7
    """Fresh interpreters timed importing ``requeststate`` (``importtime.py``); 0 skips it."""

    @classmethod
    def full(cls) -> Settings:
        """The full run: a few minutes on a 2-core machine.

        Many short samples rather than a few long ones: on a shared machine a
        sample of half a millisecond often runs undisturbed, one of 5 ms rarely
        does, and the best is what the ratios use.
        """
        return cls(
            quick=False,
            group_seconds=2.0,
            sample_seconds=0.0005,
            memory_calls=100_000,
            multicore_seconds=3.0,
            multicore_repeats=2,
            guard_seconds=2.0,
            guard_memory_ids=100_000,
            guard_claim_seconds=2.0,
        )

    @classmethod
    def quick_run(cls) -> Settings:
        """``--quick``: the same measurements, shorter, in well under 30 s."""
        return cls(
            quick=True,
            group_seconds=0.4,
            sample_seconds=0.0005,
            memory_calls=10_000,
            multicore_seconds=0.75,
            multicore_repeats=1,
            guard_seconds=0.4,
            guard_memory_ids=20_000,
            guard_claim_seconds=0.25,
        )


@dataclass(frozen=True)
class Timing:
    """The time of one operation of one codec on one state size."""

    codec: str
    """A mode's value (``signed``, ``encrypted``, ...) or a peer's name."""
    op: str
    """``encode``, ``decode``, ``encode function``, ``decode function``, ``encode floor``,
    ``decode floor``, ``decode tampered``, ``decode wrong subject``, ``decode expired``,
    ``decode oversized`` or ``round``."""
    size: int
    best_us: float
    median_us: float
    ops_per_s: float
    number: int
    samples: int

    @classmethod
    def of(cls, codec: str, op: str, size: int, measured: Measured) -> Timing:
        """A row from the timing of one case."""
        return cls(
            codec,
            op,
            size,
            measured.best_us,
            measured.median_us,
            measured.per_second,
            measured.calls,
            measured.samples,
        )


@dataclass(frozen=True)
class MemoryRow:
    """``tracemalloc`` figures for one operation of one mode on a 64 B state."""

    mode: str
    op: str
    use: MemoryUse


@dataclass
class Results:
    """Everything one run measured, and where."""

    settings: Settings
    machine: dict[str, str]
    versions: dict[str, str | None]
    """Distribution versions; ``None`` for a peer that is not installed."""
    modes: list[str]
    peers: list[str] = field(default_factory=list)
    """The peers that were measured."""
    timings: list[Timing] = field(default_factory=list)
    memory: list[MemoryRow] = field(default_factory=list)
    scaling: Scaling | None = None
    guards: GuardResults | None = None
    """The replay guards' added cost, if measured."""
    import_time: ImportTime | None = None
    """What ``import requeststate`` costs a fresh interpreter, if measured."""
    seconds: float = 0.0

    def timing(self, codec: str, op: str, size: int) -> Timing | None:
        """The row of one operation, if it was measured."""
        for row in self.timings:
            if (row.codec, row.op, row.size) == (codec, op, size):
                return row
        return None


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _load_average() -> str:
    # Other processes on a small machine inflate every time; the load says how busy it was.
    return ", ".join(f"{value:.2f}" for value in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"


def _machine() -> dict[str, str]:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            cpu = next(
                (line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), cpu
            )
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": str(available_cores()),
        "os": platform.platform(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "requeststate build": "pure Python, as pip installs it",
        "openssl": openssl.openssl_version_text(),
        "load average at start": _load_average(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }


def _measure(cases: dict[str, Callable[[], object]], settings: Settings) -> dict[str, Measured]:
    # The package's harness: interleaved rounds of one sample each, within the group's budget.
    batches = {name: repeated(case) for name, case in cases.items()}
    return measure(batches, seconds=settings.group_seconds, sample_seconds=settings.sample_seconds)


def run(settings: Settings, progress: Callable[[str], None] = lambda line: None) -> Results:
    """Measure everything ``settings`` asks for; ``progress`` hears one line per step."""
    began = time.perf_counter()
    results = Results(
        settings=settings,
        machine=_machine(),
        versions={
            name: _version(name)
            for name in (
                *_CORE_DISTRIBUTIONS,
                *(peer.distribution for peer in PEERS),
                *_GUARD_DISTRIBUTIONS,
            )
        },
        modes=[mode.value for mode in rs.Mode],
    )
    if settings.import_runs:
        progress(f"import requeststate: {settings.import_runs} fresh interpreters, -X importtime")
        results.import_time = measure_import(settings.import_runs)
    ring = rs.KeyRing(os.urandom(32))
    smallest = min(settings.sizes)
    for size in settings.sizes:
        state = make_state(size)
        for mode in rs.Mode:
            progress(f"{mode.value}, {size} B: codec, floor and refusals")
            cases = codec_cases(state, ring, mode, oversized=size == smallest)
            timed = _measure(cases, settings)
            results.timings += [Timing.of(mode.value, op, size, one) for op, one in timed.items()]
        progress(f"{size} B: rounds, ours and peers")
        rounds: dict[str, Callable[[], object]] = {
            mode.value: round_trip(state, ring, mode) for mode in rs.Mode
        }
        for peer in PEERS if settings.peers else ():
            peer_round = build_peer(peer, state)
            if peer_round is not None:
                rounds[peer.name] = peer_round
        timed = _measure(rounds, settings)
        results.timings += [Timing.of(codec, "round", size, one) for codec, one in timed.items()]
    results.peers = [peer.name for peer in PEERS if results.timing(peer.name, "round", smallest) is not None]
    state = make_state(smallest)
    for mode in rs.Mode:
        progress(f"{mode.value}: memory over {settings.memory_calls} calls")
        cases = codec_cases(state, ring, mode, oversized=False)
        results.memory += [
            MemoryRow(mode.value, op, measure_memory(cases[op], settings.memory_calls))
            for op in ("encode", "decode")
        ]
    if settings.guards:
        results.guards = measure_guards(
            seconds=settings.guard_seconds,
            sample_seconds=settings.sample_seconds,
            memory_ids=settings.guard_memory_ids,
            redis=settings.guard_redis,
            claim_seconds=settings.guard_claim_seconds,
            progress=progress,
        )
    if settings.multicore:
        progress(f"throughput: 1 process, then {available_cores()}, {settings.multicore_seconds} s each")
        results.scaling = measure_scaling(settings.multicore_seconds, repeats=settings.multicore_repeats)
    results.machine["load average at end"] = _load_average()
    results.seconds = time.perf_counter() - began
    return results
