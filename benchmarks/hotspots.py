"""Where a 64 B ``encode`` and ``decode`` spend their time: ``python -m benchmarks.hotspots [--calls N]``.

For each mode and operation, ``cProfile`` runs the call many times and the
functions are ranked by their own time (``tottime``). A profiler's cost per
function call is large next to a microsecond, so its shares are shown next to
an estimate in real microseconds: the share of the profiled total times the
call's unprofiled best time (``requeststate.bench.measure``, measured first). Trust the ranking
and the rough size, not the last digit.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import requeststate as rs
from requeststate.bench import measure, repeated

from .cases import codec_cases, make_state

__all__ = ["Hotspot", "hotspots", "main"]


@dataclass(frozen=True)
class Hotspot:
    """One function's own time within one operation."""

    function: str
    calls_per_op: float
    share: float
    """Of the profiled total."""
    estimated_us: float
    """``share`` times the unprofiled time of one operation."""


def _label(key: tuple[str, int, str]) -> str:
    filename, line, name = key
    if filename == "~":  # a builtin: cProfile names it "<built-in method ...>"
        return name
    parts = filename.replace(os.sep, "/").split("/")
    return f"{'/'.join(parts[-2:])}:{line} {name}"


def hotspots(operation: Callable[[], object], calls: int) -> tuple[float, list[Hotspot]]:
    """The unprofiled best µs of ``operation``, and its functions ranked by own time."""
    real_us = measure({"op": repeated(operation)}, seconds=0.2, sample_seconds=0.005)["op"].best_us
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        operation()
    profiler.disable()
    # pstats keeps (primitive calls, calls, own time, cumulative time, callers) per function.
    table: dict[tuple[str, int, str], tuple[int, int, float, float, object]]
    table = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    total = sum(own for _, _, own, _, _ in table.values())
    ranked = sorted(table.items(), key=lambda item: item[1][2], reverse=True)
    return real_us, [
        Hotspot(_label(key), count / calls, own / total, own / total * real_us)
        for key, (_, count, own, _, _) in ranked
        if key[2] != "<method 'disable' of '_lsprof.Profiler' objects>"
    ]


def main(argv: Sequence[str] | None = None) -> int:
    """Print the top functions of 64 B ``encode`` and ``decode`` in every mode."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.hotspots", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--calls", type=int, default=100_000, help="profiled calls per operation")
    parser.add_argument("--top", type=int, default=12, help="functions shown per operation")
    args = parser.parse_args(argv)
    ring = rs.KeyRing(os.urandom(32))
    for mode in rs.Mode:
        cases = codec_cases(make_state(64), ring, mode, oversized=False)
        for op in ("encode", "decode"):
            real_us, ranked = hotspots(cases[op], args.calls)
            print(f"\n{mode.value} {op}, 64 B: {real_us:.2f} µs per call unprofiled")
            print(f"  {'est. µs':>7}  {'share':>6}  {'calls':>5}  function")
            for spot in ranked[: args.top]:
                share, calls = f"{spot.share:6.1%}", f"{spot.calls_per_op:5.1f}"
                print(f"  {spot.estimated_us:7.3f}  {share}  {calls}  {spot.function}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
