"""How a run's results print: a table per layer and the verdict, or one JSON object (docs/cli.md, bench).

What the figures mean (what bounds a round) is ``_analysis``'s; this module only lays them out.
"""

from __future__ import annotations

import json
import platform
from collections.abc import Sequence

import requeststate as rs

from ._analysis import bounds, compared, per_second, round_layer, transport, us, verdict, workers
from ._claim_load import ClaimLevel
from ._guards import shown_url
from ._http import HTTP_CLIENTS
from ._measure import ModeResult, Results

__all__ = ["as_json", "text"]


def _python() -> str:
    return f"{platform.python_implementation()} {platform.python_version()}"


def _describe_state(results: Results) -> str:
    settings = results.settings
    source = "generated" if settings.state_file is None else f"from {settings.state_file}"
    return f"a {settings.state_bytes:,}-byte state ({source})"


def _mode_rows(modes: Sequence[ModeResult]) -> list[str]:
    lines = [f"{'codec':<11}{'token':>9}{'encode':>12}{'decode':>12}{'round':>12}{'rounds/s':>12}"]
    for mode in modes:
        lines.append(
            f"{mode.mode:<11}{f'{mode.token_bytes:,} B':>9}{us(mode.encode.median_us):>12}"
            f"{us(mode.decode.median_us):>12}{us(mode.round.median_us):>12}"
            f"{per_second(mode.round.per_second):>12}"
        )
    return lines


def _boundary_rows(results: Results) -> list[str]:
    if results.mcp_missing is not None:
        return [f"MCP round: {results.mcp_missing}"]
    heading = f"MCP round ({results.guard_mode.mode}, in process)"
    lines = [f"{heading:<34}{'round':>12}{'rounds/s':>12}  compared"]
    for boundary in results.boundaries:
        ratio = compared(results, boundary.boundary)
        versus = "" if ratio is None else f"  {ratio[1]:.2f}x {ratio[0]}"
        lines.append(
            f"{boundary.boundary:<34}{us(boundary.round.median_us):>12}"
            f"{per_second(boundary.round.per_second):>12}{versus}"
        )
    return lines


def _http_rows(results: Results) -> list[str]:
    if results.http_missing is not None:
        return [f"MCP round over HTTP: {results.http_missing}"]
    heading = f"MCP round over HTTP ({HTTP_CLIENTS} clients, loopback)"
    lines = [f"{heading:<42}{'rounds':>8}{'rounds/s':>12}{'p50':>15}{'p99':>15}"]
    for server in results.http:
        name = f"{server.server} server"
        lines.append(
            f"{name:<42}{server.rounds:>8,}{per_second(server.rounds_per_second):>12}"
            f"{us(server.p50_us):>15}{us(server.p99_us):>15}"
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
                f"{name:<{width}}{guard.path:<6}{workers(guard.path, level.concurrency):>13}"
                f"{per_second(level.claims_per_second):>12}{us(level.p50_us):>13}{us(level.p99_us):>13}"
            )
            name = ""
    for guard in results.guards:
        for level in guard.levels:
            if level.refused:
                lines.append(
                    f"{shown_url(guard.url)} {guard.path} at {workers(guard.path, level.concurrency)}: "
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
        f"codec and MCP: medians of {results.rounds} interleaved batches per case; HTTP: rounds of "
        f"{HTTP_CLIENTS} clients a server, in turn; guards: claims of fresh tokens for up to "
        f"{results.level_seconds:.2f} s a level; "
        f"{results.seconds_taken:.1f} s in all; compare within one run only",
        "",
        *_mode_rows(results.modes),
        "",
        *_boundary_rows(results),
        "",
        *_http_rows(results),
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
                "rounds_per_second": round(mode.round.per_second),
            }
            for mode in results.modes
        ],
        "guard_mode": results.guard_mode.mode.value,
        "mcp": [
            {
                "boundary": boundary.boundary,
                "round_us": round(boundary.round.median_us, 3),
                "rounds_per_second": round(boundary.round.per_second),
                "versus": None if (ratio := compared(results, boundary.boundary)) is None else ratio[0],
                "ratio": None if ratio is None else round(ratio[1], 3),
            }
            for boundary in results.boundaries
        ],
        "mcp_missing": results.mcp_missing,
        "http": [
            {
                "server": server.server,
                "clients": HTTP_CLIENTS,
                "rounds": server.rounds,
                "seconds": round(server.seconds, 4),
                "rounds_per_second": round(server.rounds_per_second),
                "p50_us": round(server.p50_us, 3),
                "p99_us": round(server.p99_us, 3),
            }
            for server in results.http
        ],
        "http_missing": results.http_missing,
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
            "round_us": round(layer.round.median_us, 3),
            "rounds_per_second": round(layer.round.per_second),
        },
        "transport": None if (over_http := transport(results)) is None else round(over_http),
        "bounds": [
            {
                "guard": shown_url(bound.guard.url),
                "path": bound.guard.path,
                "concurrency": bound.level.concurrency,
                "claims_per_second": round(bound.level.claims_per_second),
                "bound_by": bound.bound_by,
            }
            for bound in bounds(results)
        ],
        "seconds": settings.seconds,
        "seconds_taken": round(results.seconds_taken, 3),
        "rounds": results.rounds,
        "verdict": verdict(results),
    }
    return json.dumps(document)
