"""The cost per round of our MCP bindings against the SDK's boundary: ``python -m benchmarks.mcp_rounds``.

The rounds are the installed package's (``requeststate.bench.boundary_rounds``,
which ``requeststate bench`` times too, so these figures reproduce from the
wheel; its docstring names each case): one retry of a multi-round tool call
through each boundary, called directly (no transport), for a signed-in user,
a 64 B state and two arguments, ours ``encrypted``. Our boundaries count on
OpenTelemetry as installed: with ``opentelemetry-api`` and no provider set,
the API's no-ops. Here each case's best sample counts; ``requeststate bench``
prints medians.

The target: ``protect()`` at most ``PROTECT_TARGET`` (0.45x) of the SDK
boundary's time per round, in the same run.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from typing import Final

import requeststate as rs
from requeststate.bench import boundary_rounds, measure, repeated, signed_in

from .cases import make_state

__all__ = ["PROTECT_TARGET", "main", "round_cases"]

PROTECT_TARGET: Final = 0.45
"""``protect()``'s best time per round, as a share of the SDK boundary's at most."""


def round_cases(secret: bytes) -> dict[str, Callable[[], str]]:
    """Each boundary's round on a 64 B state, ours ``encrypted``: the package's ``boundary_rounds``."""
    return boundary_rounds(make_state(64), rs.Codec(rs.KeyRing(secret), mode="encrypted"))


def main(argv: Sequence[str] | None = None) -> int:
    """Print each boundary's best µs per round and its ratio to the SDK's boundary."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.mcp_rounds", description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    parser.add_argument("--seconds", type=float, default=10.0, help="the budget, shared by the cases")
    args = parser.parse_args(argv)
    with signed_in():
        batches = {name: repeated(case) for name, case in round_cases(os.urandom(32)).items()}
        stats = measure(batches, seconds=args.seconds, sample_seconds=0.02)
    sdk = stats["SDK boundary"].best_us
    for name, one in stats.items():
        ratio = one.best_us / sdk
        target = ""
        if name == "protect()":
            verdict = "PASS" if ratio <= PROTECT_TARGET else "FAIL"
            target = f"  ({ratio:.3f}x, target <= {PROTECT_TARGET:.2f}x: {verdict})"
        print(f"{name:>22}  {one.best_us:7.2f} µs/round  {ratio:5.2f}x SDK boundary{target}")
    if "protect(FastMCP)" in stats:
        fastmcp = stats["protect(FastMCP)"].best_us / stats["FastMCP's boundary"].best_us
        print(f"{'':>22}  protect(FastMCP) is {fastmcp:.2f}x FastMCP's own boundary")
    added = stats["protect()"].best_us - stats['protect(bind="mcpd")'].best_us
    print(f'{"added bindings":>22}  {added:7.2f} µs/round  (protect() minus protect(bind="mcpd"))')
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
