"""The guards ``--guard URL`` names: built from the URL, begun, and what they wrote deleted after.

A ``--guard`` is a ``REQUESTSTATE_GUARD`` URL (``requeststate.guard_from_url``), one of
``_options.GUARD_URLS``; its ``?namespace=`` is replaced by the run's own.

The user's store may be a live one: each Redis or SQLite guard claims only
under a namespace of the run's own (``requeststate-bench-`` and random hex),
never the one a server's guards use; the run deletes every Redis key of it
when it ends (an SQLite file keeps its rows: name a scratch file). A store's
integration is imported only for its URL: the redis extra is optional.
"""

from __future__ import annotations

import inspect
import os
import sys
import time
import urllib.parse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Final

import requeststate as rs

from ._options import MEMORY_URL, ConfigError

__all__ = [
    "HIDDEN",
    "NAMESPACE_PREFIX",
    "BenchGuard",
    "bench_guard",
    "guard_from_url",
    "shown_url",
    "store_error",
]

NAMESPACE_PREFIX: Final = "requeststate-bench-"
HIDDEN: Final = "(address hidden: an '@' after it; percent-encode the password)"
"""Shown for a URL whose password may run past its host: a '/', '?' or '#' in it, not percent-encoded."""


def shown_url(url: str) -> str:
    """``url`` without its user, password, query and fragment, for reports and errors.

    A password ends at the last '@' of the authority (``scheme://`` up to the
    first '/', '?' or '#'); one that holds an unencoded '/', '?' or '#' ends the
    authority early, and leaves an '@' after it: then nothing past the scheme is
    shown, since any part of the rest may be the password. The text is cut, not
    rebuilt: urlunsplit would drop the empty authority of ``sqlite:////path``.
    """
    scheme, separator, rest = url.strip().partition("://")
    if not separator:  # memory, or no URL: its first word only
        return scheme.partition("?")[0].partition("#")[0].partition(":")[0].partition("@")[0]
    ends = [at for at in (rest.find(mark) for mark in "/?#") if at >= 0]
    authority_end = min(ends, default=len(rest))
    authority, after = rest[:authority_end], rest[authority_end:]
    if "@" in after:
        return f"{scheme}://{HIDDEN}"
    path = after.partition("?")[0].partition("#")[0]
    return f"{scheme}://{authority.rpartition('@')[2]}{path}"


def store_error(url: str, error: BaseException) -> str:
    """What a store's exception says, for a ``--guard`` error: its words, unless the URL hides its address.

    A client names the address it failed to reach: where ``shown_url`` hides
    it, that address may be part of a password, and only the exception's type is told.
    """
    if shown_url(url).endswith(HIDDEN):
        return type(error).__name__
    return f"{type(error).__name__}: {error}"


def guard_from_url(
    url: str, *, asyncio: bool = False, namespace: str | None = None
) -> rs.Guard | rs.AsyncGuard:
    """The guard ``url`` names (``requeststate.guard_from_url``), sync or its asyncio twin, on ``namespace``.

    ``namespace`` replaces the URL's own ``?namespace=`` (``memory`` takes none).
    An error shows ``url`` as ``shown_url`` does, never the URL as rewritten.

    Raises:
        ConfigError: a URL no guard takes (its words, which name ``REQUESTSTATE_GUARD``), or
            the store's extra missing.
    """
    built = url if namespace is None else _with_namespace(url, namespace)
    try:
        return rs.guard_from_url(built, asyncio=asyncio)
    except ValueError as refused:
        raise ConfigError(f"--guard {shown_url(url)}: {refused}") from None
    except ImportError as missing:  # the store's extra: the integration's own message names it
        raise ConfigError(f"--guard {shown_url(url)}: {missing}") from None


@dataclass(frozen=True)
class BenchGuard:
    """A begun guard of one ``--guard`` URL, sync or asyncio, and the first unix second it accepts."""

    url: str
    """The URL as given: ``shown_url`` prints it."""
    guard: rs.Guard | rs.AsyncGuard
    first_second: int

    @property
    def kind(self) -> str:
        """The guard's class: ``MemoryGuard``, ``RedisGuard``, ``AsyncRedisGuard``."""
        return type(self.guard).__name__


@asynccontextmanager
async def bench_guard(url: str, *, asyncio: bool) -> AsyncIterator[BenchGuard]:
    """The guard ``url`` names, on a namespace of the run's own, begun; closed, and its keys deleted, after.

    A sync guard is built, begun and closed from the event loop too: its calls
    block the loop, and no task runs meanwhile. Deleting and closing are
    best-effort: a store lost by then costs a warning on stderr, never the
    measurement.

    Raises:
        ConfigError: the URL cannot be used, the extra is missing, or the store
            did not answer.
    """
    shown = shown_url(url)
    namespace = f"{NAMESPACE_PREFIX}{os.urandom(8).hex()}"
    memory = url.strip().lower() == MEMORY_URL  # it takes no query, and shares nothing
    try:
        guard = guard_from_url(url, asyncio=asyncio, namespace=None if memory else namespace)
    except ConfigError:
        raise
    except Exception as error:  # redis-py's errors, and ValueError for a URL it cannot read
        raise ConfigError(f"--guard {shown}: {store_error(url, error)}") from None
    try:
        first_second = await _begin(guard)
    except rs.GuardUnavailable as error:
        await _clean_up(guard, namespace, warn=False)  # the masters that answered may hold a marker
        cause = "" if error.__cause__ is None else f": {store_error(url, error.__cause__)}"
        raise ConfigError(f"--guard {shown}: {error}{cause}") from None
    try:
        yield BenchGuard(url, guard, first_second)
    finally:
        await _clean_up(guard, namespace, warn=True)


def _with_namespace(url: str, namespace: str) -> str:
    # Cut, not rebuilt: urlunsplit would make sqlite:////path a relative sqlite://path.
    base, _, query = url.partition("?")
    kept = [(name, value) for name, value in urllib.parse.parse_qsl(query) if name != "namespace"]
    return f"{base}?{urllib.parse.urlencode([*kept, ('namespace', namespace)])}"


async def _begin(guard: object) -> int:
    # Every guard of the package has begin(); a user's own may not, and accepts every token
    # minted from now on.
    begin = getattr(guard, "begin", None)
    if begin is None:
        return int(time.time())
    begun = begin()
    first_second: int = await begun if inspect.isawaitable(begun) else begun
    return first_second


async def _clean_up(guard: object, namespace: str, *, warn: bool) -> None:
    try:
        await _delete(guard, namespace, warn=warn)
    finally:
        await _close(guard)


async def _close(guard: object) -> None:
    close = getattr(guard, "aclose", None) or getattr(guard, "close", None)
    if close is None:
        return
    try:
        closed = close()
        if inspect.isawaitable(closed):
            await closed
    # Best-effort: the measurement is finished and the store's own error is of no use to it
    # (AsyncRedisGuard.aclose() raises on a server killed meanwhile). Its type is named.
    except Exception as error:
        print(f"warning: the {type(guard).__name__} did not close ({type(error).__name__})", file=sys.stderr)


async def _delete(guard: object, namespace: str, *, warn: bool) -> None:
    # A Redis guard's claims and markers live under its bucket_keys; an SQLite file keeps the
    # run's rows (docs/cli.md: name a scratch file). A Redis guard was built only if its
    # integration was imported.
    if "requeststate.redis" not in sys.modules:
        return
    import redis.exceptions

    from requeststate.redis import AsyncRedisGuard, RedisGuard

    if not isinstance(guard, RedisGuard | AsyncRedisGuard):
        return
    try:
        # One DEL a key, sent as a plain command: the cluster client's delete() goes through its
        # pipeline(), which warns on redis-py 6.0 (its own deprecated argument).
        for key in guard.bucket_keys:
            deleted = guard.client.execute_command("DEL", key)
            if inspect.isawaitable(deleted):
                await deleted
    except (redis.exceptions.RedisError, redis.exceptions.RedisClusterException) as error:
        if warn:
            print(
                f"warning: the bench's keys under {namespace}:* were not deleted ({type(error).__name__})",
                file=sys.stderr,
            )
