"""What ``requeststate bench`` measures: each layer a request crosses, each on its own.

Every case goes through the public API as a server calls it: a ``Codec``
built once, ``encode(state, subject=..., tool=...)`` and ``decode(token,
subject=..., tool=...)``.

- **The codec**, per mode: ``encode``; ``decode`` of the same valid token (no
  guard, so it stays valid); a **round**, ``encode`` then ``decode``.
- **The MCP boundary**, with the mcp extra: one round of ``protect()`` beside
  the SDK's own boundary (and FastMCP's, when it is installed), called in
  process (``_mcp``), in the first mode.
- **A round over HTTP**, with the mcp extra: real servers, the SDK's as shipped
  and protected, and real clients, over streamable HTTP on loopback (``_http``).
- **Each guard** ``--guard`` names, sync (threads, ``Codec.decode``) and async
  (tasks, ``Codec.adecode``), at each concurrency of ``CONCURRENCY``: claims of
  fresh tokens per second, with their latencies (``_claim_load``).

The codec and the boundaries are timed in turn, in interleaved batches, within
a third of the budget; the rounds over HTTP take another third, and the
guards' levels share the last. A guard's tokens are
minted and decoded at one fixed ``now``, from the first second its ``begin()``
accepts.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Final

import requeststate as rs

from ._claim_load import CONCURRENCY, ClaimLevel, claims_async, claims_threads, stops_rising_at, tokens_for
from ._guards import BenchGuard, bench_guard
from ._http import HttpResult, http_rounds
from ._mcp import boundary_rounds, signed_in
from ._options import ConfigError, Settings
from ._timing import Batch, Timing, measure, repeated

__all__ = [
    "ASYNC",
    "HTTP_MISSING",
    "MCP_MISSING",
    "SUBJECT",
    "SYNC",
    "TOOL",
    "BoundaryResult",
    "GuardResult",
    "ModeResult",
    "Results",
    "measure_all",
    "measure_guard",
]

SUBJECT: Final = "bench-user"
TOOL: Final = "bench-tool"
SYNC: Final = "sync"
"""A guard's path through ``Codec.decode``, from threads."""
ASYNC: Final = "async"
"""A guard's path through ``await Codec.adecode``, from tasks of one event loop."""
MCP_MISSING: Final = "not measured: the mcp extra is not installed (pip install 'requeststate[mcp]')"
HTTP_MISSING: Final = "not measured: uvicorn is not installed (the mcp SDK installs it)"
_BOUNDARY_CASE: Final = "mcp "


@dataclass(frozen=True)
class ModeResult:
    """One mode's costs for the run's state and key ring."""

    mode: rs.Mode
    token_bytes: int
    encode: Timing
    decode: Timing
    round: Timing
    """``encode`` then ``decode`` of the token it returned, timed as one call."""


@dataclass(frozen=True)
class BoundaryResult:
    """One MCP boundary's round: open the echoed state, run the handler, seal the next one."""

    boundary: str
    """``SDK boundary``, ``protect()``, ... (``_mcp``'s names)."""
    round: Timing


@dataclass(frozen=True)
class GuardResult:
    """Claims through one ``--guard`` URL on one path, at each concurrency of ``CONCURRENCY``."""

    url: str
    """As given; ``shown_url`` prints it."""
    guard: str
    """The guard's class: ``MemoryGuard``, ``RedisGuard``, ``AsyncRedisGuard``."""
    path: str
    """``sync`` (threads) or ``async`` (tasks)."""
    levels: tuple[ClaimLevel, ...]

    @property
    def best(self) -> ClaimLevel:
        """The level that claimed the most per second."""
        return max(self.levels, key=lambda level: level.claims_per_second)

    @property
    def stops_rising_at(self) -> int | None:
        """The concurrency past which more adds under 10% claims/s; ``None`` if it rose to the last."""
        return stops_rising_at(self.levels)


@dataclass(frozen=True)
class Results:
    """Everything one run measured."""

    settings: Settings
    modes: tuple[ModeResult, ...]
    boundaries: tuple[BoundaryResult, ...]
    """Empty when the mcp extra is missing (``mcp_missing`` says so)."""
    mcp_missing: str | None
    http: tuple[HttpResult, ...]
    """Rounds over HTTP, the SDK's server as shipped and protected; empty when not measured."""
    http_missing: str | None
    guards: tuple[GuardResult, ...]
    level_seconds: float
    """The most time each guard's level claimed for (it stops sooner when its tokens run out)."""
    rounds: int
    """Samples taken of every codec and boundary case, interleaved."""
    seconds_taken: float
    """From the first token minted to the last claim: preparing, calibrating, measuring."""

    @property
    def guard_mode(self) -> ModeResult:
        """The mode the boundaries and the guards were measured in: the first given."""
        return self.modes[0]

    def boundary(self, name: str) -> BoundaryResult | None:
        """The boundary measured under ``name``, if it was."""
        return next((one for one in self.boundaries if one.boundary == name), None)

    def over_http(self, name: str) -> HttpResult | None:
        """The rounds over HTTP through the server ``name`` (``SDK boundary``, ``protect()``), if measured."""
        return next((one for one in self.http if one.server == name), None)


def measure_all(settings: Settings) -> Results:
    """Measure every layer ``settings`` names: its modes, the MCP boundaries, and each guard.

    Raises:
        ConfigError: the key ring cannot be built, a mode cannot mint the state
            (a token over the size limit), or a guard cannot be used (or does not guard).
    """
    started = time.monotonic()
    keys = _key_ring(settings.keys)
    codecs = {mode: rs.Codec(keys, mode=mode) for mode in settings.modes}
    token_bytes = {mode: _check_mode(codec, settings) for mode, codec in codecs.items()}
    batches: dict[str, Batch] = {}
    for mode, codec in codecs.items():
        batches |= _mode_batches(mode, codec, settings.state)
    guard_mode = settings.modes[0]
    mcp_missing: str | None = None
    try:
        rounds = boundary_rounds(settings.state, codecs[guard_mode])
    except ImportError:
        mcp_missing, rounds = MCP_MISSING, {}
    batches |= {_BOUNDARY_CASE + name: repeated(round_trip) for name, round_trip in rounds.items()}
    share = settings.seconds / 3
    with signed_in() if rounds else nullcontext():
        timings = measure(batches, seconds=share)
    http, http_missing = _over_http(settings.state, codecs[guard_mode], share, mcp_missing)
    modes = tuple(
        ModeResult(
            mode,
            token_bytes[mode],
            timings[f"{mode} encode"],
            timings[f"{mode} decode"],
            timings[f"{mode} round"],
        )
        for mode in settings.modes
    )
    boundaries = tuple(BoundaryResult(name, timings[_BOUNDARY_CASE + name]) for name in rounds)
    level_seconds = share / (len(settings.guard_urls) * 2 * len(CONCURRENCY))
    decodes_per_second = 1e6 / timings[f"{guard_mode} decode"].median_us
    guards = tuple(
        asyncio.run(
            measure_guard(url, path, settings.state, codecs[guard_mode], level_seconds, decodes_per_second)
        )
        for url in settings.guard_urls
        for path in (SYNC, ASYNC)
    )
    return Results(
        settings,
        modes,
        boundaries,
        mcp_missing,
        http,
        http_missing,
        guards,
        level_seconds,
        rounds=timings[f"{guard_mode} round"].samples,
        seconds_taken=time.monotonic() - started,
    )


async def measure_guard(
    url: str,
    path: str,
    state: str,
    minting: rs.Codec,
    level_seconds: float,
    rate_hint: float,
    concurrency: Sequence[int] = CONCURRENCY,
) -> GuardResult:
    """Claims through the guard ``url`` names on ``path`` (``SYNC`` or ``ASYNC``), at each ``concurrency``.

    Tokens of ``state`` are minted by ``minting`` (its keys and first mode, no
    guard); ``rate_hint``, the claims per second to mint for at the first level
    (an unguarded decode's rate bounds it), then each level's rate scaled up.

    Raises:
        ConfigError: the guard cannot be used, refuses a fresh token, or accepts a replay.
    """
    async with bench_guard(url, asyncio=path == ASYNC) as begun:
        codec = rs.Codec(minting.keys, mode=minting.modes[0], guard=begun.guard)
        now = max(int(time.time()), begun.first_second)

        def mint(count: int) -> list[str]:
            # By the guarded codec, as a server mints: a MemoryGuard accepts its own codecs' tokens
            # from its first second, and no other's minted then.
            return [codec.encode(state, subject=SUBJECT, tool=TOOL, now=now) for _ in range(count)]

        run_level: Callable[[list[str], int], Awaitable[ClaimLevel]]
        if path == SYNC:

            def decode(token: str) -> object:
                return codec.decode(token, subject=SUBJECT, tool=TOOL, now=now)

            async def run_level(tokens: list[str], level: int) -> ClaimLevel:
                return claims_threads(decode, tokens, level, level_seconds)
        else:

            async def adecode(token: str) -> object:
                return await codec.adecode(token, subject=SUBJECT, tool=TOOL, now=now)

            async def run_level(tokens: list[str], level: int) -> ClaimLevel:
                return await claims_async(adecode, tokens, level, level_seconds)

        await _check_guard(begun, mint(1)[0], codec, now)
        levels: list[ClaimLevel] = []
        for previous, level in zip((None, *concurrency), concurrency, strict=False):
            hint = _rate_hint(rate_hint, levels, previous, level)
            levels.append(await run_level(mint(tokens_for(hint, level_seconds, level)), level))
    return GuardResult(url, begun.kind, path, tuple(levels))


def _over_http(
    state: str, codec: rs.Codec, seconds: float, mcp_missing: str | None
) -> tuple[tuple[HttpResult, ...], str | None]:
    # The rounds over HTTP, or why they were not measured: without the mcp extra, for the same reason.
    if mcp_missing is not None:
        return (), mcp_missing
    try:
        return http_rounds(state, codec, seconds), None
    except ImportError:
        return (), HTTP_MISSING


def _rate_hint(ceiling: float, levels: list[ClaimLevel], previous: int | None, level: int) -> float:
    # Claims per second to mint for: the last level's, scaled by the concurrency, within the ceiling.
    if previous is None:
        return ceiling
    return min(ceiling, levels[-1].claims_per_second * level / previous)


async def _check_guard(begun: BenchGuard, token: str, codec: rs.Codec, now: int) -> None:
    # Before timing: a fresh token is accepted, and its replay refused.
    try:
        await codec.averify(token, subject=SUBJECT, tool=TOOL, now=now)
    except rs.InvalidToken as refused:
        raise ConfigError(f"the {begun.kind} refused a fresh token ({refused.reason})") from None
    if await codec.adecode(token, subject=SUBJECT, tool=TOOL, now=now) is not None:
        raise ConfigError(f"the {begun.kind} accepted a replay: it does not guard")


def _key_ring(length: int) -> rs.KeyRing:
    try:
        return rs.KeyRing(*(os.urandom(32) for _ in range(length)))
    except ValueError as error:
        raise ConfigError(f"--keys {length}: {error}") from None


def _check_mode(codec: rs.Codec, settings: Settings) -> int:
    # Before timing: the state mints in this mode, and its token decodes to it (a refusal is not timed).
    mode = codec.modes[0]
    try:
        token = codec.encode(settings.state, subject=SUBJECT, tool=TOOL)
    except ValueError as error:
        raise ConfigError(
            f"a {settings.state_bytes}-byte state cannot be minted in {mode}: {error}"
        ) from None
    if codec.decode(token, subject=SUBJECT, tool=TOOL) != settings.state:
        raise RuntimeError(f"a {mode} token of the state did not decode to it")
    return len(token)


def _mode_batches(mode: rs.Mode, codec: rs.Codec, state: str) -> dict[str, Batch]:
    token = codec.encode(state, subject=SUBJECT, tool=TOOL)

    def encode() -> object:
        return codec.encode(state, subject=SUBJECT, tool=TOOL)

    def decode() -> object:
        return codec.decode(token, subject=SUBJECT, tool=TOOL)

    def round_trip() -> object:
        return codec.decode(codec.encode(state, subject=SUBJECT, tool=TOOL), subject=SUBJECT, tool=TOOL)

    return {
        f"{mode} encode": repeated(encode),
        f"{mode} decode": repeated(decode),
        f"{mode} round": repeated(round_trip),
    }
