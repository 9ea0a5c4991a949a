"""What ``requeststate bench`` measures: each mode's encode, decode and round, and what a replay guard adds.

Every case goes through the public API as a server calls it: a ``Codec`` built
once, ``encode(state, subject=..., tool=...)`` and ``decode(token, subject=...,
tool=...)``. Per mode:

- **encode**: mint a token of the state;
- **decode**: verify the same valid token again (no guard, so it stays valid);
- **round**: encode and decode, what a server does per input-required round trip.

A replay guard refuses a token it has seen, so each guarded decode gets a token
never decoded before, minted before its batch's clock starts: decodes with no
guard, a ``MemoryGuard`` and (``--redis``) a ``RedisGuard``, in the first mode
given (a claim sees the token's id only, the same in every mode). What a guard
adds is its median minus the unguarded one. These tokens are minted and
decoded at one fixed ``now``: a Redis whose memory of claims begins with this
run accepts only tokens minted after ``begin()``'s first second.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

import requeststate as rs

from ._options import ConfigError, Settings
from ._timing import Batch, Timing, measure, repeated

__all__ = [
    "MEMORY_GUARD",
    "NO_GUARD",
    "REDIS_GUARD",
    "SUBJECT",
    "TOOL",
    "FreshDecodes",
    "GuardResult",
    "ModeResult",
    "RenewedMemoryGuard",
    "Results",
    "measure_all",
]

SUBJECT: Final = "bench-user"
TOOL: Final = "bench-tool"
NO_GUARD: Final = "none"
MEMORY_GUARD: Final = "MemoryGuard"
REDIS_GUARD: Final = "RedisGuard"


@dataclass(frozen=True)
class ModeResult:
    """One mode's costs for the run's state and key ring."""

    mode: rs.Mode
    token_bytes: int
    encode: Timing
    decode: Timing
    round: Timing
    """``encode`` then ``decode`` of the token it returned, timed as one call."""

    @property
    def rounds_per_second(self) -> float:
        """Rounds one core sustains, from the median round."""
        return 1e6 / self.round.median_us


@dataclass(frozen=True)
class GuardResult:
    """Decodes of fresh tokens with one guard (or none), in the run's first mode."""

    guard: str
    """``none``, ``MemoryGuard`` or ``RedisGuard``."""
    decode: Timing
    added_us: float
    """Its median decode minus the unguarded one: what the guard adds to each round."""
    decodes: int
    """Fresh tokens decoded, calibration included; each one a claim, with a guard."""
    refused: int
    """Of those, refused: a claim that failed (a Redis that did not answer in time)."""


@dataclass(frozen=True)
class Results:
    """Everything one run measured."""

    settings: Settings
    modes: tuple[ModeResult, ...]
    guards: tuple[GuardResult, ...]
    rounds: int
    """Samples taken of every case, interleaved."""
    seconds_taken: float
    """From the first token minted to the last sample: preparing, calibrating, measuring."""

    @property
    def guard_mode(self) -> ModeResult:
        """The mode the guards were measured in: the first given."""
        return self.modes[0]

    def guarded_rounds_per_second(self, guard: GuardResult) -> float:
        """Rounds one core sustains in the guards' mode with ``guard``: its round plus what the guard adds."""
        return 1e6 / (self.guard_mode.round.median_us + guard.added_us)


class FreshDecodes:
    """A ``Batch`` of decodes, each of a token never decoded before: what a replay guard sees.

    A batch's tokens are minted before its clock starts. ``verifier(calls)`` is the
    codec that decodes the next ``calls`` of them.
    """

    def __init__(self, mint: Callable[[], str], verifier: Callable[[int], rs.Codec], now: int) -> None:
        self._mint: Final = mint
        self._verifier: Final = verifier
        self._now: Final = now
        self.decodes = 0
        self.refused = 0

    def __call__(self, calls: int) -> int:
        """Decode ``calls`` fresh tokens; the nanoseconds the decodes took."""
        decode = self._verifier(calls).decode
        now = self._now
        tokens = [self._mint() for _ in range(calls)]
        refused = 0
        began = time.perf_counter_ns()
        for token in tokens:
            if decode(token, subject=SUBJECT, tool=TOOL, now=now) is None:
                refused += 1
        elapsed_ns = time.perf_counter_ns() - began
        self.decodes += calls
        self.refused += refused
        return elapsed_ns


class RenewedMemoryGuard:
    """A codec with a ``MemoryGuard``, given a new guard before a batch would fill it.

    A full guard refuses every token, and a refusal is not what a claim costs. A
    run claims more ids than a server holds at once: all its tokens live at one ``now``.
    """

    def __init__(self, keys: rs.KeyRing, mode: rs.Mode, capacity: int | None = None) -> None:
        """``capacity``: each guard's; ``None``, a ``MemoryGuard()``'s default, as a server builds one."""
        self._keys: Final = keys
        self._mode: Final = mode
        self._capacity: Final = capacity
        self._guard = self._new_guard()
        self._codec = rs.Codec(keys, mode=mode, guard=self._guard)

    def codec_for(self, calls: int) -> rs.Codec:
        """The codec to decode the next ``calls`` fresh tokens with."""
        if len(self._guard) + calls > self._guard.capacity:
            self._guard = self._new_guard()
            self._codec = rs.Codec(self._keys, mode=self._mode, guard=self._guard)
        return self._codec

    def _new_guard(self) -> rs.MemoryGuard:
        return rs.MemoryGuard() if self._capacity is None else rs.MemoryGuard(self._capacity)


def measure_all(settings: Settings, redis_guard: rs.Guard | None = None, first_second: int = 0) -> Results:
    """Measure every mode of ``settings``, and the guards in its first mode, within its budget.

    ``redis_guard``: a begun ``RedisGuard`` to measure too, whose tokens must be
    minted at ``first_second`` or later (what its ``begin()`` returned).

    Raises:
        ConfigError: the key ring cannot be built, a mode cannot mint the state
            (a token over the size limit), or a guard refuses a fresh token.
    """
    started = time.monotonic()
    keys = _key_ring(settings.keys)
    codecs = {mode: rs.Codec(keys, mode=mode) for mode in settings.modes}
    token_bytes = {mode: _check_mode(codec, settings) for mode, codec in codecs.items()}
    batches: dict[str, Batch] = {}
    for mode, codec in codecs.items():
        batches |= _mode_batches(mode, codec, settings.state)

    guard_mode = settings.modes[0]
    minting = codecs[guard_mode]
    now = max(int(time.time()), first_second)

    def mint() -> str:
        return minting.encode(settings.state, subject=SUBJECT, tool=TOOL, now=now)

    verifiers: dict[str, Callable[[int], rs.Codec]] = {
        NO_GUARD: lambda calls: minting,
        MEMORY_GUARD: RenewedMemoryGuard(keys, guard_mode).codec_for,
    }
    if redis_guard is not None:
        redis_codec = rs.Codec(keys, mode=guard_mode, guard=redis_guard)
        verifiers[REDIS_GUARD] = lambda calls: redis_codec
    for name, verifier in verifiers.items():
        if name != NO_GUARD:
            _check_guard(name, verifier(1), mint(), now)
    fresh = {name: FreshDecodes(mint, verifier, now) for name, verifier in verifiers.items()}

    timings = measure({**batches, **fresh}, seconds=settings.seconds)
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
    unguarded_us = timings[NO_GUARD].median_us
    guards = tuple(
        GuardResult(
            name, timings[name], timings[name].median_us - unguarded_us, decodes.decodes, decodes.refused
        )
        for name, decodes in fresh.items()
    )
    return Results(
        settings, modes, guards, rounds=timings[NO_GUARD].samples, seconds_taken=time.monotonic() - started
    )


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


def _check_guard(name: str, codec: rs.Codec, token: str, now: int) -> None:
    # Before timing: a fresh token is accepted, and its replay refused.
    try:
        codec.verify(token, subject=SUBJECT, tool=TOOL, now=now)
    except rs.InvalidToken as refused:
        raise ConfigError(f"the {name} refused a fresh token ({refused.reason})") from None
    if codec.decode(token, subject=SUBJECT, tool=TOOL, now=now) is not None:
        raise ConfigError(f"the {name} accepted a replay: it does not guard")


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
