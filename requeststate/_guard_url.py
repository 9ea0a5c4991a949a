"""``guard_from_url``: a replay guard from one URL, as ``REQUESTSTATE_GUARD`` spells it.

The one place where the core reaches an integration: a URL names a store, and only the
integration that speaks to that store can build its guard. Each is imported here, by the
table ``_STORES``, when a URL names it and not before, so ``import requeststate`` loads
none of them (docs/architecture.md, "The import graph").
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Mapping
from typing import Final, Literal, NamedTuple, overload
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

from ._env import ENV_GUARD
from ._guard import AsyncGuard, Guard
from ._memory import MemoryGuard

__all__ = ["guard_from_env", "guard_from_url"]


class _Store(NamedTuple):
    """A store a URL may name: the integration that builds its guards, and the options it takes."""

    module: str
    """The integration's module, imported when a URL first names the store."""
    sync: str
    """The guard class for a sync codec (``verify``, ``decode``)."""
    asyncio: str
    """Its asyncio twin (``averify``, ``adecode``)."""
    options: tuple[str, ...]
    """The query options the URL may carry."""


_REDIS: Final = _Store("requeststate.redis", "RedisGuard", "AsyncRedisGuard", ("namespace", "timeout"))
_SQLITE: Final = _Store("requeststate.sqlite", "SQLiteGuard", "AsyncSQLiteGuard", ("namespace", "timeout"))
_POSTGRES: Final = _Store(
    "requeststate.postgres", "PostgresGuard", "AsyncPostgresGuard", ("namespace", "timeout", "clock_skew")
)
_STORES: Final = {
    "redis": _REDIS,
    "rediss": _REDIS,
    "redis+cluster": _REDIS,
    "rediss+cluster": _REDIS,
    "sqlite": _SQLITE,
    "postgresql": _POSTGRES,
    "postgres": _POSTGRES,
}
"""Each scheme, and the store it names."""
_CLUSTER: Final = "+cluster"
_MEMORY: Final = "memory"
_REDIS_DB: Final = re.compile(r"/?(\d+)?")

_ACCEPTED: Final = (
    "memory, redis://host:port/db, rediss://host:port/db, redis+cluster://host:port, "
    "rediss+cluster://host:port, sqlite:////absolute/path.db, or postgresql://user@host:port/dbname"
)
"""The URLs a guard is built from, as an error lists them."""
# A URL's text never reaches a message: a password may be in it, or, when it is not
# percent-encoded ('/', '?', '#' or '@' in it), in any part of it.
_ENCODE_HINT: Final = "(a password with '/', '?', '#' or '@' in it must be percent-encoded)"


def _refused(what: str) -> ValueError:
    return ValueError(f"{ENV_GUARD} {what}")


@overload
def guard_from_url(url: str, *, asyncio: Literal[False] = False) -> Guard: ...
@overload
def guard_from_url(url: str, *, asyncio: bool) -> Guard | AsyncGuard: ...
def guard_from_url(url: str, *, asyncio: bool = False) -> Guard | AsyncGuard:
    """The replay guard a URL names, as ``REQUESTSTATE_GUARD`` spells it.

    - ``memory``: a ``MemoryGuard`` (one process; it serves sync and asyncio codecs alike);
    - ``redis://host:port/db``, ``rediss://host:port/db`` (TLS): ``requeststate.redis.RedisGuard``;
    - ``redis+cluster://host:port``, ``rediss+cluster://host:port``: the same on a Redis
      Cluster, from the address of any of its nodes (``from_url(..., cluster=True)``);
    - ``sqlite:////absolute/path.db`` (four slashes: the path is absolute, as workers may not
      share a working directory): ``requeststate.sqlite.SQLiteGuard``, one file shared by
      every process of one host.

    Options go in the query: ``?namespace=NAME`` and ``?timeout=SECONDS`` (how long a claim
    waits: for Redis to connect or answer, for the SQLite file's lock). ``asyncio=True`` builds
    the asyncio twin (``AsyncRedisGuard``, ``AsyncSQLiteGuard``), for a codec read with
    ``averify``/``adecode``. The store's integration is imported here, when a URL names it.

    Raises:
        ValueError: a URL none of these, naming ``REQUESTSTATE_GUARD`` and what it accepts;
            never any part of the URL, which may hold a password.
        ImportError: the store's extra is not installed (``pip install 'requeststate[redis]'``).
    """
    if not isinstance(url, str):
        raise TypeError(f"url must be a str, not {type(url).__name__}")
    text = url.strip()
    if text.lower() == _MEMORY:
        return MemoryGuard()
    try:
        parts = urlsplit(text)
    except ValueError:  # an unclosed '[' of an IPv6 host
        raise _refused(f"is not a URL {_ENCODE_HINT}; it must be {_ACCEPTED}") from None
    store = _STORES.get(parts.scheme)
    if store is None:
        raise _refused(f"must be {_ACCEPTED}: its scheme is none of these")
    if parts.fragment:
        raise _refused(f"has a '#' {_ENCODE_HINT}")
    options = _options(parts.query, store)
    if store is _SQLITE:
        arguments: tuple[str, ...] = (_sqlite_path(parts.netloc, parts.path),)
    elif store is _POSTGRES:
        arguments, options = (text,), {}  # its from_url reads the whole URL, query and all
    else:
        arguments = (_redis_address(parts.scheme, parts.netloc, parts.path),)
        options["cluster"] = parts.scheme.endswith(_CLUSTER)
    guard_class = getattr(importlib.import_module(store.module), store.asyncio if asyncio else store.sync)
    build = guard_class if store is _SQLITE else guard_class.from_url
    try:
        guard: Guard | AsyncGuard = build(*arguments, **options)
    except (TypeError, ValueError) as refused:  # an option's value, in the guard's own words
        raise _refused(f"has an option the guard refuses: {refused}") from None
    return guard


def guard_from_env(environ: Mapping[str, str], *, asyncio: bool) -> Guard | AsyncGuard | None:
    """``REQUESTSTATE_GUARD``'s guard (``guard_from_url``), or ``None`` when it is unset or empty."""
    url = environ.get(ENV_GUARD, "").strip()
    return guard_from_url(url, asyncio=asyncio) if url else None


def _options(query: str, store: _Store) -> dict[str, object]:
    """The query's options, each once and each one the store takes; ``timeout`` as seconds."""
    pairs = parse_qsl(query, keep_blank_values=True)
    names = [name for name, _ in pairs]
    if not set(names) <= set(store.options) or len(set(names)) != len(names):
        taken = " and ".join(f"?{name}=" for name in store.options)
        raise _refused(f"may carry the options {taken}, each once; its query has another")
    options: dict[str, object] = dict(pairs)
    if "timeout" in options:
        try:
            options["timeout"] = float(pairs[names.index("timeout")][1])
        except ValueError:
            raise _refused("has a timeout that is not seconds: write it as ?timeout=0.25") from None
    return options


def _redis_address(scheme: str, netloc: str, path: str) -> str:
    """The URL redis-py reads: the plain scheme, the address and the database, no query."""
    if not netloc:
        raise _refused(f"must name the Redis host: {scheme}://host:port/db")
    try:
        urlsplit(f"//{netloc}").port  # noqa: B018 (read to check it)
    except ValueError:
        raise _refused(f"has a port that is not a number {_ENCODE_HINT}") from None
    if _REDIS_DB.fullmatch(path) is None:
        raise _refused(f"must end in the database's number (/0), or nothing {_ENCODE_HINT}")
    return urlunsplit((scheme.removesuffix(_CLUSTER), netloc, path, "", ""))


def _sqlite_path(netloc: str, path: str) -> str:
    """The file of ``sqlite:////absolute/path.db``: absolute, on this host."""
    file = unquote(path[1:])
    if netloc or not os.path.isabs(file):
        raise _refused(
            "must name the SQLite file by its absolute path, after four slashes: "
            "sqlite:////var/lib/app/claims.db (workers may not share a working directory)"
        )
    return file
