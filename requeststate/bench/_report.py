"""How a run's results print: a table per layer and the verdict, or one JSON object (docs/cli.md, bench)."""

from __future__ import annotations

import json
import platform
from collections.abc import Sequence
from dataclasses import dataclass

import requeststate as rs

from ._claims import ClaimLevel
from ._guards import shown_url
from ._mcp import FASTMCP_BOUNDARY, FASTMCP_PROTECT, PROTECT, SDK_BOUNDARY
from ._measure import GuardResult, ModeResult, Results

__all__ = ["Bound", "RoundLayer", "as_json", "bounds", "round_layer", "text", "verdict"]


def _us(value: float) -> str:
    return f"{value:.2f} µs"


def _per_second(value: float) -> str:
    return f"{value:,.0f}"


def _python() -> str:
    return f"{platform.python_implementation()} {platform.python_version()}"


def _workers(path: str, count: int) -> str:
    unit = "thread" if path == "sync" else "task"
    return f"{count} {unit}{'s' if count > 1 else ''}"


@dataclass(frozen=True)
class RoundLayer:
    """What a round costs one core before any guard: ``protect()``'s round, or the codec's without mcp."""

    name: str
    """``protect()``, or ``the <mode> codec``."""
    round_us: float

    @property
    def rounds_per_second(self) -> float:
        """Rounds one core sustains, from the median round."""
        return 1e6 / self.round_us


@dataclass(frozen=True)
class Bound:
    """One guard's most claims per second, against the round's rate on one core: which is lower."""

    guard: GuardResult
    level: ClaimLevel
    """The guard's level that claimed the most per second, of either path."""
    guard_bounds: bool
    """True when the guard claims fewer per second than one core runs rounds."""


def round_layer(results: Results) -> RoundLayer:
    """``protect()``'s round when the mcp extra is installed, else the codec's round in the guards' mode."""
    protected = results.boundary(PROTECT)
    if protected is not None:
        return RoundLayer(PROTECT, protected.round.median_us)
    mode = results.guard_mode
    return RoundLayer(f"the {mode.mode} codec", mode.round.median_us)


def bounds(results: Results) -> list[Bound]:
    """Per ``--guard`` URL, its best level (sync or async) and whether it, or the round, is the lower rate."""
    layer = round_layer(results)
    found = []
    for url in results.settings.guard_urls:
        paths = [guard for guard in results.guards if guard.url == url]
        best = max(paths, key=lambda guard: guard.best.claims_per_second)
        found.append(Bound(best, best.best, best.best.claims_per_second < layer.rounds_per_second))
    return found


def _ratio(results: Results, name: str) -> tuple[str, float] | None:
    """The boundary ``name`` is compared with, and its round as a share of that one's."""
    versus = FASTMCP_BOUNDARY if name == FASTMCP_PROTECT else SDK_BOUNDARY
    mine, theirs = results.boundary(name), results.boundary(versus)
    if mine is None or theirs is None or name == versus:
        return None
    return versus, mine.round.median_us / theirs.round.median_us


def verdict(results: Results) -> list[str]:
    """What bounds a round here, and what each guard sustains: each figure one this run measured."""
    layer = round_layer(results)
    mode = results.guard_mode
    first = (
        f"a round: {layer.name} {_us(layer.round_us)}, {_per_second(layer.rounds_per_second)} rounds/s "
        "on one core"
    )
    protected = _ratio(results, PROTECT)
    if protected is not None:
        versus, ratio = protected
        first += (
            f", {ratio:.2f}x the {versus}'s round; the {mode.mode} codec's encode and decode "
            f"{_us(mode.round.median_us)}"
        )
    fastmcp = _ratio(results, FASTMCP_PROTECT)
    if fastmcp is not None:
        first += f"; protect(FastMCP) {fastmcp[1]:.2f}x FastMCP's own boundary"
    lines = [first]
    for bound in bounds(results):
        guard, level = bound.guard, bound.level
        rise = guard.stops_rising_at
        scaling = "still rising" if rise is None else f"stops rising past {_workers(guard.path, rise)}"
        which = (
            "the guard bounds a round"
            if bound.guard_bounds
            else f"the round ({layer.name}), not the guard, bounds it"
        )
        lines.append(
            f"{shown_url(guard.url)} ({guard.guard}): {_per_second(level.claims_per_second)} claims/s, "
            f"{guard.path} at {_workers(guard.path, level.concurrency)} ({scaling}), against "
            f"{_per_second(layer.rounds_per_second)} rounds/s: {which}"
        )
    if results.mcp_missing is not None:
        lines.append(f"protect() and the SDK's boundary {results.mcp_missing}")
    lines.append(
        "not measured here: your transport (HTTP, JSON-RPC framing) and your handlers; a server far below "
        "these rates spends its time there"
    )
    return lines


def _describe_state(results: Results) -> str:
    settings = results.settings
    source = "generated" if settings.state_file is None else f"from {settings.state_file}"
    return f"a {settings.state_bytes:,}-byte state ({source})"


def _mode_rows(modes: Sequence[ModeResult]) -> list[str]:
    lines = [f"{'codec':<11}{'token':>9}{'encode':>12}{'decode':>12}{'round':>12}{'rounds/s':>12}"]
    for mode in modes:
        lines.append(
            f"{mode.mode:<11}{f'{mode.token_bytes:,} B':>9}{_us(mode.encode.median_us):>12}"
            f"{_us(mode.decode.median_us):>12}{_us(mode.round.median_us):>12}"
            f"{_per_second(mode.rounds_per_second):>12}"
        )
    return lines


def _boundary_rows(results: Results) -> list[str]:
    if results.mcp_missing is not None:
        return [f"MCP round: {results.mcp_missing}"]
    heading = f"MCP round ({results.guard_mode.mode}, in process)"
    lines = [f"{heading:<34}{'round':>12}{'rounds/s':>12}  compared"]
    for boundary in results.boundaries:
        ratio = _ratio(results, boundary.boundary)
        compared = "" if ratio is None else f"  {ratio[1]:.2f}x {ratio[0]}"
        lines.append(
            f"{boundary.boundary:<34}{_us(boundary.round.median_us):>12}"
            f"{_per_second(boundary.rounds_per_second):>12}{compared}"
        )
    return lines


def _guard_rows(results: Results) -> list[str]:
    names = [f"{shown_url(guard.url)} ({guard.guard})" for guard in results.guards]
    heading = f"guard ({results.guard_mode.mode}, fresh tokens)"
    width = max(len(heading), *map(len, names)) + 2
    lines = [f"{heading:<{width}}{'path':<6}{'concurrency':>13}{'claims/s':>12}{'p50':>13}{'p99':>13}"]
    for name, guard in zip(names, results.guards, strict=True):
        for level in guard.levels:
            lines.append(
                f"{name:<{width}}{guard.path:<6}{_workers(guard.path, level.concurrency):>13}"
                f"{_per_second(level.claims_per_second):>12}{_us(level.p50_us):>13}{_us(level.p99_us):>13}"
            )
            name = ""
    for guard in results.guards:
        for level in guard.levels:
            if level.refused:
                lines.append(
                    f"{shown_url(guard.url)} {guard.path} at {_workers(guard.path, level.concurrency)}: "
                    f"{level.refused:,} of {level.claims:,} fresh tokens refused (claims that failed): "
                    "its figures include them"
                )
    return lines


def text(results: Results) -> str:
    """The report: what was measured, a table per layer, and the verdict."""
    settings = results.settings
    keys = f"a ring of {settings.keys} key{'s' if settings.keys > 1 else ''}"
    lines = [
        f"requeststate {rs.__version__} bench on {_python()}: {_describe_state(results)}, {keys}",
        f"codec and MCP: medians of {results.rounds} interleaved batches per case; guards: claims of "
        f"fresh tokens for up to {results.level_seconds:.2f} s a level; "
        f"{results.seconds_taken:.1f} s in all; compare within one run only",
        "",
        *_mode_rows(results.modes),
        "",
        *_boundary_rows(results),
        "",
        *_guard_rows(results),
        "",
        "verdict:",
        *(f"  {line}" for line in verdict(results)),
    ]
    return "\n".join(lines) + "\n"


def _level_json(level: ClaimLevel) -> dict[str, object]:
    return {
        "concurrency": level.concurrency,
        "claims": level.claims,
        "refused": level.refused,
        "seconds": round(level.seconds, 4),
        "claims_per_second": round(level.claims_per_second),
        "p50_us": round(level.p50_us, 3),
        "p99_us": round(level.p99_us, 3),
    }


def as_json(results: Results) -> str:
    """The results as one JSON object, ASCII, on one line: docs/cli.md's table documents each member."""
    settings = results.settings
    layer = round_layer(results)
    document = {
        "version": rs.__version__,
        "python": _python(),
        "state_bytes": settings.state_bytes,
        "state_file": settings.state_file,
        "keys": settings.keys,
        "modes": [
            {
                "mode": mode.mode.value,
                "token_bytes": mode.token_bytes,
                "encode_us": round(mode.encode.median_us, 3),
                "decode_us": round(mode.decode.median_us, 3),
                "round_us": round(mode.round.median_us, 3),
                "rounds_per_second": round(mode.rounds_per_second),
            }
            for mode in results.modes
        ],
        "guard_mode": results.guard_mode.mode.value,
        "mcp": [
            {
                "boundary": boundary.boundary,
                "round_us": round(boundary.round.median_us, 3),
                "rounds_per_second": round(boundary.rounds_per_second),
                "versus": None if (ratio := _ratio(results, boundary.boundary)) is None else ratio[0],
                "ratio": None if ratio is None else round(ratio[1], 3),
            }
            for boundary in results.boundaries
        ],
        "mcp_missing": results.mcp_missing,
        "guards": [
            {
                "guard": shown_url(guard.url),
                "class": guard.guard,
                "path": guard.path,
                "levels": [_level_json(level) for level in guard.levels],
                "stops_rising_at": guard.stops_rising_at,
            }
            for guard in results.guards
        ],
        "round": {
            "layer": layer.name,
            "round_us": round(layer.round_us, 3),
            "rounds_per_second": round(layer.rounds_per_second),
        },
        "bounds": [
            {
                "guard": shown_url(bound.guard.url),
                "path": bound.guard.path,
                "concurrency": bound.level.concurrency,
                "claims_per_second": round(bound.level.claims_per_second),
                "bound_by": "guard" if bound.guard_bounds else "round",
            }
            for bound in bounds(results)
        ],
        "seconds": settings.seconds,
        "seconds_taken": round(results.seconds_taken, 3),
        "rounds": results.rounds,
        "verdict": verdict(results),
    }
    return json.dumps(document)
