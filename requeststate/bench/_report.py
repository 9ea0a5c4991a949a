"""How a run's results print: the report's tables and its reading, or one JSON object (docs/cli.md, bench)."""

from __future__ import annotations

import json
import platform
from collections.abc import Sequence

import requeststate as rs

from ._measure import NO_GUARD, GuardResult, ModeResult, Results
from ._redis import shown_url

__all__ = ["as_json", "reading", "text"]


def _us(value: float) -> str:
    return f"{value:.2f} µs"


def _per_second(value: float) -> str:
    return f"{value:,.0f}"


def _python() -> str:
    return f"{platform.python_implementation()} {platform.python_version()}"


def reading(results: Results) -> str:
    """One line: how the modes compare (or what a round costs, for one mode), then what each guard adds.

    Computed from this run's medians, as the report prints them (to 0.01 µs), so
    that the words agree with the table.
    """
    return "; ".join([_modes_reading(results.modes), *map(_guard_reading, _guards(results))])


def _modes_reading(modes: Sequence[ModeResult]) -> str:
    first, others = modes[0], modes[1:]
    if not others:
        return (
            f"one {first.mode} round costs {_us(first.round.median_us)} here, "
            f"{_per_second(first.rounds_per_second)} rounds/s on one core"
        )
    comparisons = []
    for other in others:
        shown_other = round(other.round.median_us, 2)
        difference = round(first.round.median_us, 2) - shown_other
        if difference == 0:
            comparisons.append(f"the same a round as {other.mode}")
            continue
        direction = "more" if difference > 0 else "less"
        share = abs(difference) / shown_other
        comparisons.append(f"{_us(abs(difference))} ({share:.0%}) a round {direction} than {other.mode}")
    return f"{first.mode} costs {' and '.join(comparisons)} here"


def _guard_reading(guard: GuardResult) -> str:
    added = round(guard.added_us, 2)
    if added <= 0:  # the guard's claims hid in the noise of the unguarded decodes
        return f"a {guard.guard} adds nothing measurable"
    return f"a {guard.guard} adds {_us(added)} a round"


def _guards(results: Results) -> list[GuardResult]:
    return [guard for guard in results.guards if guard.guard != NO_GUARD]


def _describe_state(results: Results) -> str:
    settings = results.settings
    source = "generated" if settings.state_file is None else f"from {settings.state_file}"
    return f"a {settings.state_bytes:,}-byte state ({source})"


def text(results: Results) -> str:
    """The report: what was measured, a row per mode, a row per guard, and the reading."""
    settings = results.settings
    keys = f"a ring of {settings.keys} key{'s' if settings.keys > 1 else ''}"
    lines = [
        f"requeststate {rs.__version__} bench on {_python()}: {_describe_state(results)}, {keys}",
        f"medians of {results.rounds} interleaved batches per case, {results.seconds_taken:.1f} s; "
        "compare within one run only",
        "",
        f"{'mode':<11}{'token':>9}{'encode':>12}{'decode':>12}{'round':>12}{'rounds/s':>12}",
    ]
    for mode in results.modes:
        lines.append(
            f"{mode.mode:<11}{f'{mode.token_bytes:,} B':>9}{_us(mode.encode.median_us):>12}"
            f"{_us(mode.decode.median_us):>12}{_us(mode.round.median_us):>12}"
            f"{_per_second(mode.rounds_per_second):>12}"
        )
    lines += [
        "",
        f"{'guard':<11}{'decode (' + results.guard_mode.mode + ', a fresh token)':>33}"
        f"{'adds a round':>14}{'rounds/s':>12}",
    ]
    for guard in results.guards:
        added = "-" if guard.guard == NO_GUARD else _us(guard.added_us)
        lines.append(
            f"{guard.guard:<11}{_us(guard.decode.median_us):>33}{added:>14}"
            f"{_per_second(results.guarded_rounds_per_second(guard)):>12}"
        )
    lines.append("")
    if settings.redis_url is not None:
        kind = "a Redis Cluster" if settings.cluster else "Redis"
        lines.append(
            f"RedisGuard: {kind} at {shown_url(settings.redis_url)}, claims under a namespace of "
            "the bench's own, deleted after"
        )
    for guard in results.guards:
        if guard.refused:
            lines.append(
                f"{guard.guard}: {guard.refused:,} of {guard.decodes:,} fresh tokens refused "
                "(claims that failed): its times include them"
            )
    lines.append(f"reading: {reading(results)}")
    return "\n".join(lines) + "\n"


def as_json(results: Results) -> str:
    """The results as one JSON object, ASCII, on one line: docs/cli.md's table documents each member."""
    settings = results.settings
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
        "guards": [
            {
                "guard": guard.guard,
                "decode_us": round(guard.decode.median_us, 3),
                "added_us": round(guard.added_us, 3),
                "rounds_per_second": round(results.guarded_rounds_per_second(guard)),
                "decodes": guard.decodes,
                "refused": guard.refused,
            }
            for guard in results.guards
        ],
        "redis": None if settings.redis_url is None else shown_url(settings.redis_url),
        "cluster": settings.cluster,
        "seconds": settings.seconds,
        "seconds_taken": round(results.seconds_taken, 3),
        "rounds": results.rounds,
        "reading": reading(results),
    }
    return json.dumps(document)
