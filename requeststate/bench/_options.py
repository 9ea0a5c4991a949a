"""The options of ``requeststate bench``, and the settings they make once checked."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import requeststate as rs

__all__ = [
    "DEFAULT_SECONDS",
    "DEFAULT_STATE_BYTES",
    "GUARD_NOTE",
    "GUARD_URLS",
    "MAX_SECONDS",
    "MEMORY_URL",
    "MIN_STATE_BYTES",
    "ConfigError",
    "Settings",
    "add_arguments",
    "generated_state",
    "guard_urls_text",
    "settings_from",
]

MEMORY_URL: Final = "memory"
GUARD_NOTE: Final = (
    "a store is used under a namespace of the run's own (a Redis's keys are deleted after; an SQLite "
    "file and a PostgreSQL database keep the run's rows); Redis needs the redis extra, PostgreSQL the "
    "postgres extra"
)
"""What ``--guard`` does to a store, after its URLs: ``--help`` and docs/cli.md say it from here."""
GUARD_URLS: Final = (
    (MEMORY_URL, "a MemoryGuard, the default"),
    ("redis://HOST:PORT/DB", "a RedisGuard, and an AsyncRedisGuard for the async path"),
    ("rediss://HOST:PORT/DB", "the same over TLS"),
    ("redis+cluster://HOST:PORT", "any node of a Redis Cluster"),
    ("rediss+cluster://HOST:PORT", "the same over TLS"),
    ("sqlite:////ABSOLUTE/PATH.db", "an SQLiteGuard and an AsyncSQLiteGuard; name a scratch file"),
    ("postgresql://USER@HOST:PORT/DB", "a PostgresGuard and an AsyncPostgresGuard"),
)
"""The URLs ``--guard`` takes, each with what it builds: ``--help`` and docs/cli.md list them from here.

A subset of what ``requeststate.guard_from_url`` reads; a store it learns is one line here.
"""
DEFAULT_STATE_BYTES: Final = 64
DEFAULT_SECONDS: Final = 5.0
# Two minutes: far past any useful run, within the lifetime of the token the decode case mints
# once (a codec's default ttl, 300 s), and it catches milliseconds typed as seconds.
MAX_SECONDS: Final = 120.0
_STATE_HEAD: Final = '{"data":"'
_STATE_TAIL: Final = '"}'
MIN_STATE_BYTES: Final = len(_STATE_HEAD) + len(_STATE_TAIL)


class ConfigError(Exception):
    """An option or what it names cannot be used: the message says which, and why (exit 2)."""


@dataclass(frozen=True)
class Settings:
    """What one run measures: the options, checked, with the state they name read or made."""

    state: str
    """The state every token carries, as ``encode`` receives it."""
    state_file: str | None
    """The file the state was read from, as given; ``None`` for a generated state."""
    modes: tuple[rs.Mode, ...]
    """The modes compared, in the order given; the first is the one the guards are measured in."""
    keys: int
    """The length of the key ring; its first key mints."""
    guard_urls: tuple[str, ...]
    """The guards to measure, as ``--guard`` named them (``memory`` when none was named)."""
    seconds: float
    """The timing budget: a third each for the codec and the MCP boundaries, HTTP, and the guards' claims."""
    as_json: bool

    @property
    def state_bytes(self) -> int:
        """The state's size in UTF-8 bytes."""
        return len(self.state.encode("utf-8"))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``requeststate bench`` to ``parser``; ``settings_from`` checks their values."""
    modes = ", ".join(mode.value for mode in rs.Mode)
    parser.add_argument(
        "--mode",
        action="append",
        metavar="MODE[,MODE...]",
        help=f"the modes to measure and compare, repeated or comma-separated ({modes}; default: all)",
    )
    state = parser.add_mutually_exclusive_group()
    state.add_argument(
        "--state-bytes",
        type=int,
        metavar="N",
        help=f"a generated JSON state of N bytes (default {DEFAULT_STATE_BYTES}, at least {MIN_STATE_BYTES})",
    )
    state.add_argument(
        "--state-file",
        metavar="PATH",
        help="a sample state: the file's text (UTF-8), as your server passes it to encode",
    )
    parser.add_argument(
        "--keys",
        type=int,
        default=1,
        metavar="N",
        help="the length of the key ring: N random keys, the first mints (default 1)",
    )
    parser.add_argument(
        "--guard",
        action="append",
        metavar="URL",
        help=f"a replay guard to measure, repeated for several: {guard_urls_text()}; {GUARD_NOTE}",
    )
    parser.add_argument(
        "--seconds",
        type=float,
        default=DEFAULT_SECONDS,
        metavar="S",
        help=f"the timing budget in seconds (default {DEFAULT_SECONDS:g}); setup and minting come on top",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the report")


def guard_urls_text(code: str = "") -> str:
    """``GUARD_URLS`` as one phrase, each URL wrapped in ``code`` (a backtick for Markdown)."""
    return ", ".join(f"{code}{url}{code} ({builds})" for url, builds in GUARD_URLS)


def settings_from(args: argparse.Namespace) -> Settings:
    """The run ``args`` asks for, checked; the state read from its file or generated.

    Raises:
        ConfigError: a value out of range, an unknown mode, or a state file that
            cannot be read as UTF-8 text.
    """
    if args.keys < 1:
        raise ConfigError(f"--keys must be 1 or more, not {args.keys}")
    if not 0 < args.seconds <= MAX_SECONDS:  # NaN fails both comparisons
        raise ConfigError(f"--seconds must be more than 0 and at most {MAX_SECONDS:g}, not {args.seconds:g}")
    if args.state_file is not None:
        state = _read_state(args.state_file)
    else:
        state = generated_state(DEFAULT_STATE_BYTES if args.state_bytes is None else args.state_bytes)
    return Settings(
        state=state,
        state_file=args.state_file,
        modes=_modes(args.mode),
        keys=args.keys,
        guard_urls=tuple(dict.fromkeys(args.guard or [MEMORY_URL])),  # named twice, measured once
        seconds=args.seconds,
        as_json=args.json,
    )


def generated_state(size: int) -> str:
    """JSON text of exactly ``size`` bytes, random hex inside, so that nothing gets an easy input.

    Raises:
        ConfigError: ``size`` is below ``MIN_STATE_BYTES``, or above the largest token a codec
            reads by default (no state that size fits in one).
    """
    if not MIN_STATE_BYTES <= size <= rs.DEFAULT_MAX_TOKEN_BYTES:
        raise ConfigError(
            f"--state-bytes must be from {MIN_STATE_BYTES} to {rs.DEFAULT_MAX_TOKEN_BYTES}, not {size}"
        )
    filler = size - MIN_STATE_BYTES
    return _STATE_HEAD + os.urandom((filler + 1) // 2).hex()[:filler] + _STATE_TAIL


def _read_state(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise ConfigError(
            f"--state-file {path}: not UTF-8 text ({error.reason} at byte {error.start})"
        ) from None
    except OSError as error:
        raise ConfigError(f"--state-file {path}: {error.strerror or error}") from None


def _modes(given: list[str] | None) -> tuple[rs.Mode, ...]:
    if given is None:
        return tuple(rs.Mode)
    modes: list[rs.Mode] = []
    for name in (part.strip() for value in given for part in value.split(",")):
        try:
            mode = rs.Mode(name)
        except ValueError:
            choices = ", ".join(mode.value for mode in rs.Mode)
            raise ConfigError(f"--mode: unknown mode {name!r}; the modes are {choices}") from None
        if mode not in modes:  # named twice, measured once
            modes.append(mode)
    return tuple(modes)
