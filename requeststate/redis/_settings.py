"""A Redis guard's options, declared once (``GuardOptions``) and checked once at construction
(``buckets_for`` and the ``Ledger``), and the client options ``from_url`` sets."""

from __future__ import annotations

from typing import Final, TypedDict

from requeststate._seam import check_seconds, refuse_unknown

from ._buckets import CLUSTER_BUCKETS

__all__ = [
    "DEFAULT_NAMESPACE",
    "DEFAULT_TIMEOUT",
    "GuardOptions",
    "buckets_for",
    "client_options",
]

DEFAULT_NAMESPACE: Final = "requeststate"
"""The prefix of every key a guard writes, unless ``namespace=`` says otherwise."""
DEFAULT_TIMEOUT: Final = 0.25
"""Seconds ``from_url``'s client waits to connect or for an answer."""


class GuardOptions(TypedDict, total=False):
    """The options of ``RedisGuard`` and ``AsyncRedisGuard`` beside the client: one declaration for both.

    Both guards' constructors and ``from_url`` take these names (``from_url``
    also takes ``cluster`` and ``timeout``, for the client it builds), and each is
    checked when the guard is built, never per claim.
    """

    namespace: str
    """The prefix of every key the guard writes, one per application sharing a Redis; no ``{``
    with a Redis Cluster. Default ``DEFAULT_NAMESPACE``."""
    clock_skew: int
    """Seconds that any two hosts' clocks (and Redis's) may differ by; the same for every verifier
    of a namespace. Default ``requeststate.DEFAULT_CLOCK_SKEW``."""


_OPTION_NAMES: Final = frozenset(GuardOptions.__optional_keys__)


def buckets_for(options: GuardOptions, *, cluster: bool) -> int:
    """How many sorted sets hold the claims (``CLUSTER_BUCKETS`` on a cluster, else 1), the names checked.

    The ``Ledger`` checks the namespace and ``clock_skew``; a cluster's namespace must also
    have no hash tag.

    Raises:
        TypeError: an unknown name (``**options`` would otherwise swallow a typo).
        ValueError: a namespace with a ``{`` on a cluster.
    """
    refuse_unknown(options, _OPTION_NAMES)
    namespace = options.get("namespace", DEFAULT_NAMESPACE)
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
    seconds = check_seconds("timeout", timeout)
    return {"socket_timeout": seconds, "socket_connect_timeout": seconds}
