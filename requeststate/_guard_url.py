"""Guards from URLs, as ``REQUESTSTATE_GUARD`` spells them: the scheme table, and what every URL takes.

The one place where the core reaches an integration: a URL names a store, and only the
integration that speaks to that store can build its guard. Each is imported here, by the
table ``_STORES``, when a URL names it and not before, so ``import requeststate`` loads
none of them (docs/architecture.md, "The import graph"). The store builds itself from the
whole URL (its guard's ``from_url``); what every store's URL shares (the query's
``namespace``, ``timeout`` and ``clock_skew``, checked once) is ``split_guard_url``'s.
"""

from __future__ import annotations

import importlib
from collections.abc import Collection, Mapping
from typing import Final, Literal, NamedTuple, overload
from urllib.parse import SplitResult, parse_qsl, urlsplit

from ._bounds import check_seconds
from ._env import ENV_GUARD
from ._guard import AsyncGuard, Guard
from ._memory import MemoryGuard
from ._options import refuse_unknown

__all__ = ["MAX_GUARD_TIMEOUT", "URL_OPTIONS", "guard_from_env", "guard_from_url", "split_guard_url"]

MAX_GUARD_TIMEOUT: Final = 60.0
"""The longest ``timeout`` a guard takes, in seconds: a claim that waits longer holds a request
(and its worker) hostage to a store that is not answering."""
URL_OPTIONS: Final = ("namespace", "timeout", "clock_skew")
"""The options every store's URL may carry in its query, and its ``from_url`` by keyword."""


class _Store(NamedTuple):
    """A store a URL may name: the integration that builds its guards."""

    module: str
    """The integration's module, imported when a URL first names the store."""
    sync: str
    """The guard class for a sync codec (``verify``, ``decode``)."""
    asyncio: str
    """Its asyncio twin (``averify``, ``adecode``)."""


_REDIS: Final = _Store("requeststate.redis", "RedisGuard", "AsyncRedisGuard")
_SQLITE: Final = _Store("requeststate.sqlite", "SQLiteGuard", "AsyncSQLiteGuard")
_STORES: Final = {
    "redis": _REDIS,
    "rediss": _REDIS,
    "redis+cluster": _REDIS,
    "rediss+cluster": _REDIS,
    "sqlite": _SQLITE,
}
"""Each scheme, and the store it names."""
_MEMORY: Final = "memory"

GUARD_URLS: Final = (
    "memory, redis://host:port/db, rediss://host:port/db, redis+cluster://host:port, "
    "rediss+cluster://host:port, or sqlite:////absolute/path.db"
)
"""The URLs a guard is built from, as an error lists them."""
# A URL's text never reaches a message: a password may be in it, or, when it is not
# percent-encoded ('/', '?', '#' or '@' in it), in any part of it.
ENCODE_HINT: Final = "(a password with '/', '?', '#' or '@' in it must be percent-encoded)"


@overload
def guard_from_url(url: str, *, asyncio: Literal[False] = False) -> Guard: ...
@overload
def guard_from_url(url: str, *, asyncio: bool) -> Guard | AsyncGuard: ...
def guard_from_url(url: str, *, asyncio: bool = False) -> Guard | AsyncGuard:
    """The replay guard a URL names, as ``REQUESTSTATE_GUARD`` spells it.

    - ``memory``: a ``MemoryGuard`` (one process; it serves sync and asyncio codecs alike);
    - ``redis://host:port/db``, ``rediss://host:port/db`` (TLS): ``requeststate.redis.RedisGuard``;
    - ``redis+cluster://host:port``, ``rediss+cluster://host:port``: the same on a Redis
      Cluster, from the address of any of its nodes;
    - ``sqlite:////absolute/path.db`` (four slashes: the path is absolute, as workers may not
      share a working directory): ``requeststate.sqlite.SQLiteGuard``, one file shared by
      every process of one host.

    Every store's URL takes the same options in its query, each with the store's own
    default: ``?namespace=NAME``, ``?timeout=SECONDS`` (how long a claim waits for the store)
    and ``?clock_skew=SECONDS``. ``asyncio=True`` builds the asyncio twin
    (``AsyncRedisGuard``, ``AsyncSQLiteGuard``), for a codec read with ``averify``/``adecode``.
    The store's integration is imported here, when a URL names it, and builds the guard
    (its ``from_url``).

    Raises:
        ValueError: a URL none of these, or an option the store refuses, naming
            ``REQUESTSTATE_GUARD`` and what it accepts; never any part of the URL, which may
            hold a password.
        ImportError: the store's extra is not installed (``pip install 'requeststate[redis]'``).
    """
    if not isinstance(url, str):
        raise TypeError(f"url must be a str, not {type(url).__name__}")
    text = url.strip()
    if text.lower() == _MEMORY:
        return MemoryGuard()
    try:
        store = _STORES.get(urlsplit(text).scheme)
    except ValueError:  # an unclosed '[' of an IPv6 host
        raise ValueError(f"{ENV_GUARD} is not a URL {ENCODE_HINT}; it must be {GUARD_URLS}") from None
    if store is None:
        raise ValueError(f"{ENV_GUARD} must be {GUARD_URLS}: its scheme is none of these")
    guard_class = getattr(importlib.import_module(store.module), store.asyncio if asyncio else store.sync)
    try:
        guard: Guard | AsyncGuard = guard_class.from_url(text)
    except (TypeError, ValueError) as refused:  # the URL or an option, in the store's own words
        raise ValueError(f"{ENV_GUARD}: {refused}") from None
    return guard


def guard_from_env(environ: Mapping[str, str], *, asyncio: bool) -> Guard | AsyncGuard | None:
    """``REQUESTSTATE_GUARD``'s guard (``guard_from_url``), or ``None`` when it is unset.

    Raises:
        ValueError: it is set but empty: a deployment that meant a guard and lost its value
            would otherwise run without single use.
    """
    url = environ.get(ENV_GUARD)
    if url is None:
        return None
    if not url.strip():
        raise ValueError(
            f"{ENV_GUARD} is set but empty: name a guard ({GUARD_URLS}), or unset it to run without one"
        )
    return guard_from_url(url, asyncio=asyncio)


def split_guard_url(
    url: object, schemes: Collection[str], given: Mapping[str, object]
) -> tuple[SplitResult, dict[str, object]]:
    """A store's URL, split, and its options: those of its query and those ``given`` by keyword
    (``None``: not given).

    Each option is one of ``URL_OPTIONS``, given once (in the query or by keyword); a
    query's ``timeout`` and ``clock_skew`` are read as numbers, and ``timeout`` is checked
    here (the guard checks the rest, as it does when built without a URL).

    Raises:
        TypeError: a keyword that is no option.
        ValueError: a URL not of ``schemes``, with a fragment, or an option twice, unknown or
            not a number; the message holds no part of the URL.
    """
    if not isinstance(url, str):
        raise TypeError(f"url must be a str, not {type(url).__name__}")
    given = {name: value for name, value in given.items() if value is not None}
    refuse_unknown(given, frozenset(URL_OPTIONS))
    try:
        parts = urlsplit(url.strip())
    except ValueError:  # an unclosed '[' of an IPv6 host
        raise ValueError(f"the guard URL is not a URL {ENCODE_HINT}") from None
    if parts.scheme not in schemes:
        raise ValueError(f"the guard URL's scheme must be {' or '.join(schemes)}")
    if parts.fragment:
        raise ValueError(f"the guard URL has a '#' {ENCODE_HINT}")
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    names = [name for name, _ in pairs] + list(given)
    if not set(names) <= set(URL_OPTIONS) or len(set(names)) != len(names):
        taken = ", ".join(f"?{name}=" for name in URL_OPTIONS)
        raise ValueError(f"the guard URL may carry the options {taken}, each once; its query has another")
    query = dict(pairs)
    options: dict[str, object] = dict(query)
    for name, read, what in (("timeout", float, "a number"), ("clock_skew", int, "a whole number")):
        if name in query:
            try:
                options[name] = read(query[name])
            except ValueError:
                raise ValueError(f"the guard URL's {name} must be {what} of seconds (?{name}=1)") from None
    options.update(given)
    if "timeout" in options:
        options["timeout"] = check_guard_timeout(options["timeout"])
    return parts._replace(query=""), options


def check_guard_timeout(timeout: object) -> float:
    """A guard's ``timeout``: positive, finite seconds, at most ``MAX_GUARD_TIMEOUT``."""
    return check_seconds("timeout", timeout, maximum=MAX_GUARD_TIMEOUT)
