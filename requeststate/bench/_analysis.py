"""What a run's figures say: which layer bounds a round, and the verdict's words; no printing here.

Three rates meet: a round of the layers in process (``protect()``'s, or the
codec's without the mcp extra), a round over HTTP (the transport, with
``protect()`` on the server), and each guard's most claims per second. The
lowest bounds a round: a guard that claims fewer per second than the round
over HTTP runs bounds it; otherwise the transport does, which a server far
from these layers' rates shows (docs/cli.md, "The verdict").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from ._claim_load import ClaimLevel
from ._guards import shown_url
from ._http import HTTP_CLIENTS
from ._mcp import FASTMCP_BOUNDARY, FASTMCP_PROTECT, PROTECT, SDK_BOUNDARY
from ._measure import GuardResult, Results
from ._timing import Timing

__all__ = ["Bound", "BoundBy", "RoundLayer", "bounds", "compared", "round_layer", "transport", "verdict"]

BoundBy = Literal["guard", "transport", "round"]
"""What bounds a round against one guard: the guard, the transport (HTTP measured), or the layers' round."""
_NOT_MEASURED_HTTP: Final = (
    "not measured here: your handlers, what your auth calls, a network past loopback; a server far below "
    "these rates spends its time there"
)
_NOT_MEASURED: Final = (
    "not measured here: your transport (HTTP, JSON-RPC framing) and your handlers; a server far below "
    "these rates spends its time there"
)


def us(value: float) -> str:
    """Microseconds as the report prints them."""
    return f"{value:.2f} µs"


def per_second(value: float) -> str:
    """A rate as the report prints it."""
    return f"{value:,.0f}"


def workers(path: str, count: int) -> str:
    """``8 threads`` (sync) or ``1 task`` (async)."""
    unit = "thread" if path == "sync" else "task"
    return f"{count} {unit}{'s' if count > 1 else ''}"


@dataclass(frozen=True)
class RoundLayer:
    """What a round costs one core in process, before any guard: ``protect()``'s, or the codec's."""

    name: str
    """``protect()``, or ``the <mode> codec``."""
    round: Timing


@dataclass(frozen=True)
class Bound:
    """One guard's most claims per second, against the round's rate: which bounds a round."""

    guard: GuardResult
    level: ClaimLevel
    """The guard's level that claimed the most per second, of either path."""
    bound_by: BoundBy
    against: float
    """The rate the guard was compared with: the round over HTTP, or the layers' round."""


def round_layer(results: Results) -> RoundLayer:
    """``protect()``'s round when the mcp extra is installed, else the codec's round in the guards' mode."""
    protected = results.boundary(PROTECT)
    if protected is not None:
        return RoundLayer(PROTECT, protected.round)
    mode = results.guard_mode
    return RoundLayer(f"the {mode.mode} codec", mode.round)


def transport(results: Results) -> float | None:
    """Rounds per second over HTTP with ``protect()`` on the server, if measured."""
    protected = results.over_http(PROTECT)
    return None if protected is None else protected.rounds_per_second


def bounds(results: Results) -> list[Bound]:
    """Per ``--guard`` URL, its best level (sync or async) and what bounds a round against it."""
    over_http = transport(results)
    against = round_layer(results).round.per_second if over_http is None else over_http
    found = []
    for url in results.settings.guard_urls:
        paths = [guard for guard in results.guards if guard.url == url]
        best = max(paths, key=lambda guard: guard.best.claims_per_second)
        if best.best.claims_per_second < against:
            bound_by: BoundBy = "guard"
        else:
            bound_by = "round" if over_http is None else "transport"
        found.append(Bound(best, best.best, bound_by, against))
    return found


def compared(results: Results, name: str) -> tuple[str, float] | None:
    """The boundary ``name`` is compared with, and its round as a share of that one's."""
    versus = FASTMCP_BOUNDARY if name == FASTMCP_PROTECT else SDK_BOUNDARY
    mine, theirs = results.boundary(name), results.boundary(versus)
    if mine is None or theirs is None or name == versus:
        return None
    return versus, mine.round.median_us / theirs.round.median_us


def _in_process(results: Results) -> str:
    layer = round_layer(results)
    mode = results.guard_mode
    line = (
        f"a round in process: {layer.name} {us(layer.round.median_us)}, "
        f"{per_second(layer.round.per_second)} rounds/s on one core"
    )
    protected = compared(results, PROTECT)
    if protected is not None:
        versus, ratio = protected
        line += (
            f", {ratio:.2f}x the {versus}'s round; the {mode.mode} codec's encode and decode "
            f"{us(mode.round.median_us)}"
        )
    fastmcp = compared(results, FASTMCP_PROTECT)
    if fastmcp is not None:
        line += f"; protect(FastMCP) {fastmcp[1]:.2f}x FastMCP's own boundary"
    return line


def _over_http(results: Results) -> str | None:
    protected, shipped = results.over_http(PROTECT), results.over_http(SDK_BOUNDARY)
    if protected is None or shipped is None:
        return None
    layer = round_layer(results)
    share = layer.round.median_us * protected.rounds_per_second / 1e6
    return (
        f"a round over HTTP (streamable HTTP on loopback, {HTTP_CLIENTS} clients, server and clients in "
        f"this process): protect() {per_second(protected.rounds_per_second)} rounds/s, the SDK's server as "
        f"shipped {per_second(shipped.rounds_per_second)} "
        f"({protected.rounds_per_second / shipped.rounds_per_second:.2f}x); protect()'s own work "
        f"({us(layer.round.median_us)}) is {share:.1%} of a round's time over HTTP"
    )


def verdict(results: Results) -> list[str]:
    """What bounds a round here, and what each guard sustains: each figure one this run measured."""
    lines = [_in_process(results)]
    http = _over_http(results)
    if http is not None:
        lines.append(http)
    compared_with = "in process" if transport(results) is None else "over HTTP"
    for bound in bounds(results):
        guard, level = bound.guard, bound.level
        rise = guard.stops_rising_at
        scaling = "still rising" if rise is None else f"stops rising past {workers(guard.path, rise)}"
        which = {
            "guard": "the guard bounds a round",
            "transport": "the transport (HTTP and the MCP server and client), not the guard, bounds a round",
            "round": f"the round ({round_layer(results).name}), not the guard, bounds it",
        }[bound.bound_by]
        lines.append(
            f"{shown_url(guard.url)} ({guard.guard}): {per_second(level.claims_per_second)} claims/s, "
            f"{guard.path} at {workers(guard.path, level.concurrency)} ({scaling}), against "
            f"{per_second(bound.against)} rounds/s {compared_with}: {which}"
        )
    if results.mcp_missing is not None:
        lines.append(f"protect() and the SDK's boundary {results.mcp_missing}")
    elif results.http_missing is not None:
        lines.append(f"a round over HTTP {results.http_missing}")
    lines.append(_NOT_MEASURED_HTTP if http is not None else _NOT_MEASURED)
    return lines
