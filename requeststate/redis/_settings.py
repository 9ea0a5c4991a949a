"""A Redis guard's options and defaults, each declared once; the URL it is built from; its client."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final, NamedTuple
from urllib.parse import urlsplit, urlunsplit

from requeststate._seam import ENCODE_HINT, split_guard_url

from ._buckets import CLUSTER_BUCKETS

__all__ = [
    "DEFAULT_CLOCK_SKEW",
    "DEFAULT_NAMESPACE",
    "DEFAULT_TIMEOUT",
    "MAX_CONNECTIONS",
    "SCHEMES",
    "RedisURL",
    "buckets_for",
    "client_options",
    "read_url",
]

DEFAULT_NAMESPACE: Final = "requeststate"
"""The prefix of every key a guard writes, unless ``namespace=`` says otherwise."""
DEFAULT_TIMEOUT: Final = 0.25
"""Seconds ``from_url``'s client waits to connect, for an answer, or for a free connection."""
DEFAULT_CLOCK_SKEW: Final = 5
"""Seconds that any two hosts' clocks (and Redis's) may differ by: the hosts of a fleet read clocks
of their own (``requeststate.DEFAULT_CLOCK_SKEW``)."""
MAX_CONNECTIONS: Final = 32
"""The most connections ``from_url``'s client opens (to each node, in a cluster): a flood of
requests waits for one (up to ``timeout``) rather than open thousands, which starve Redis."""
SCHEMES: Final = ("redis", "rediss", "redis+cluster", "rediss+cluster")
"""The schemes of its URL: TLS with ``rediss``, a Redis Cluster (from any node) with ``+cluster``."""
_CLUSTER: Final = "+cluster"
_DB: Final = re.compile(r"/?(\d+)?")


class RedisURL(NamedTuple):
    """A guard's URL, read: the address redis-py takes, whether it names a cluster, and the options."""

    address: str
    cluster: bool
    options: dict[str, object]


def read_url(url: str, given: Mapping[str, object]) -> RedisURL:
    """``redis://host:port/db`` (or ``rediss``, ``+cluster``) and its options, in its query or ``given``.

    Raises:
        TypeError, ValueError: a URL of another form or a bad option, naming no part of the URL.
    """
    parts, options = split_guard_url(url, SCHEMES, given)
    if not parts.netloc:
        raise ValueError(f"the guard URL must name the Redis host: {parts.scheme}://host:port/db")
    try:
        urlsplit(f"//{parts.netloc}").port  # noqa: B018 (read to check it)
    except ValueError:
        raise ValueError(f"the guard URL has a port that is not a number {ENCODE_HINT}") from None
    if _DB.fullmatch(parts.path) is None:
        raise ValueError(f"the guard URL must end in the database's number (/0), or nothing {ENCODE_HINT}")
    address = urlunsplit((parts.scheme.removesuffix(_CLUSTER), parts.netloc, parts.path, "", ""))
    return RedisURL(address, parts.scheme.endswith(_CLUSTER), options)


def buckets_for(namespace: object, *, cluster: bool) -> int:
    """How many sorted sets hold the claims (``CLUSTER_BUCKETS`` on a cluster, else 1).

    Raises:
        ValueError: a namespace with a ``{`` on a cluster (the ``Ledger`` checks the rest).
    """
    if not cluster:
        return 1
    if isinstance(namespace, str) and "{" in namespace:
        raise ValueError(
            f"namespace {namespace!r} must not contain '{{' with a Redis Cluster: a hash tag in it would "
            "put every bucket of claims in one slot; choose a namespace without braces"
        )
    return CLUSTER_BUCKETS


def client_options(timeout: float) -> dict[str, float]:
    """The timeouts of ``from_url``'s client: ``timeout`` to connect and to read an answer."""
    return {"socket_timeout": timeout, "socket_connect_timeout": timeout}
