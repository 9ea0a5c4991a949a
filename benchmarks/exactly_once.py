"""What exactly once costs per call: ``redeem`` then ``keep`` beside ``decode`` (single use), on each guard.

``python -m benchmarks.exactly_once [--guard URL ...] [--seconds S]``. For each guard (a
``MemoryGuard`` always, and each ``--guard`` URL: ``sqlite:///...``, ``redis://...``,
``postgresql://...``), in one run and interleaved by the package's harness
(``requeststate.bench.measure``), on fresh tokens of the default (encrypted) mode, 64 B of state:

- ``decode``: a single-use redemption (one claim);
- ``redeem+keep``: an exactly-once first call (a claim with its request, then the answer, 200 B of
  JSON, sealed and kept: a second round trip on a shared store);
- ``retry``: an identical retry (one claim that reads the kept answer back, and opens it).

Each row is µs per call (median), and its ratio to ``decode`` on the same guard. The figures of
docs/exactly-once.md come from this command.
"""

from __future__ import annotations

import argparse
import secrets
import time
from collections.abc import Callable, Sequence
from typing import Final

import requeststate as rs
from requeststate.bench import Batch, Timing, measure

STATE: Final = "s" * 64
ANSWER: Final = '{"content":[{"type":"text","text":"' + "b" * 160 + '"}],"isError":false}'
SUBJECT: Final = "bench-user"
TOOL: Final = "book"
REQUEST: Final = '["bench-user","tools/call",{"arguments":{"item":"room 7"},"name":"book"}]'
CASES: Final = ("decode", "redeem+keep", "retry")


def guards(urls: Sequence[str]) -> dict[str, rs.Guard]:
    """A ``MemoryGuard`` (its memory began before any token here), and a guard per URL, each begun."""
    built: dict[str, rs.Guard] = {"memory": rs.MemoryGuard(1_000_000, clock=lambda: 0)}
    for url in urls:
        separator = "&" if "?" in url else "?"
        namespace = "" if url.startswith("sqlite") else f"namespace=bench-once-{secrets.token_hex(4)}&"
        guard = rs.guard_from_url(f"{url}{separator}{namespace}clock_skew=0")
        ready = guard.begin()  # type: ignore[attr-defined]
        time.sleep(max(0.0, ready - time.time()))
        built[url.split(":")[0]] = guard
    return built


def batches(codec: rs.Codec) -> dict[str, Batch]:
    """The three cases on ``codec``'s guard, each on fresh tokens minted before its clock starts."""

    def tokens(calls: int) -> list[str]:
        return [codec.encode(STATE, subject=SUBJECT, tool=TOOL) for _ in range(calls)]

    def timed(call: Callable[[str], object], prepared: Callable[[int], list[str]]) -> Batch:
        def batch(calls: int) -> int:
            ready = prepared(calls)
            began = time.perf_counter_ns()
            for token in ready:
                call(token)
            return time.perf_counter_ns() - began

        return batch

    def decode(token: str) -> object:
        return codec.decode(token, subject=SUBJECT, tool=TOOL)

    def redeem_and_keep(token: str) -> object:
        return codec.keep(codec.redeem(token, request=REQUEST, subject=SUBJECT, tool=TOOL), ANSWER)

    def retry(token: str) -> object:
        return codec.redeem(token, request=REQUEST, subject=SUBJECT, tool=TOOL).answer

    def answered(calls: int) -> list[str]:
        ready = tokens(calls)
        for token in ready:
            redeem_and_keep(token)
        return ready

    return {
        "decode": timed(decode, tokens),
        "redeem+keep": timed(redeem_and_keep, tokens),
        "retry": timed(retry, answered),
    }


def run(urls: Sequence[str], seconds: float) -> dict[str, dict[str, Timing]]:
    """Each guard's three cases: µs per call."""
    keys = rs.KeyRing(secrets.token_bytes(32))
    results = {}
    for name, guard in guards(urls).items():
        codec = rs.Codec(keys, guard=guard, metrics=None)
        results[name] = measure(batches(codec), seconds=seconds)
        close = getattr(guard, "close", None)
        if callable(close):
            close()
    return results


def report(results: dict[str, dict[str, Timing]]) -> str:
    lines = ["guard       case          µs/call (median)   x decode"]
    for name, timings in results.items():
        base = timings["decode"].median_us
        for case in CASES:
            median = timings[case].median_us
            lines.append(f"{name:<11} {case:<13} {median:>16.1f}   {median / base:>8.2f}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.exactly_once", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--guard", action="append", default=[], help="a guard URL (repeatable)")
    parser.add_argument("--seconds", type=float, default=6.0, help="seconds per guard (default 6)")
    options = parser.parse_args(argv)
    print(report(run(options.guard, options.seconds)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
