"""A Redis guard's options, declared once (``GuardOptions``) and checked once (``check_settings``) at
construction, and the client options ``from_url`` sets."""

from __future__ import annotations

import math
from typing import Final, NamedTuple, TypedDict

from requeststate._seam import refuse_unknown

from ._buckets import CLUSTER_BUCKETS

__all__ = [
    "DEFAULT_NAMESPACE",
    "DEFAULT_TIMEOUT",
    "GuardOptions",
    "GuardSettings",
    "check_settings",
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


class GuardSettings(NamedTuple):
    """``GuardOptions`` checked, with every default filled in (``clock_skew`` is the ledger's)."""

    namespace: str
    buckets: int
    """How many sorted sets hold the claims: ``CLUSTER_BUCKETS`` on a Redis Cluster, else 1."""


def check_settings(options: GuardOptions, *, cluster: bool) -> GuardSettings:
    """The option names and the namespace checked; ``clock_skew`` is the ``Ledger``'s to check.

    Raises:
        TypeError: an unknown name (``**options`` would otherwise swallow a typo), or a wrong type.
        ValueError: a value out of range.
    """
    refuse_unknown(options, _OPTION_NAMES)
    namespace = options.get("namespace", DEFAULT_NAMESPACE)
    if not isinstance(namespace, str):
        raise TypeError(f"namespace must be a str, not {type(namespace).__name__}")
    if not namespace:
        raise ValueError("namespace must not be empty")
    if cluster and "{" in namespace:
        raise ValueError(
            f"namespace {namespace!r} must not contain '{{' with a Redis Cluster: a hash tag in it would "
            "put every bucket of claims in one slot; choose a namespace without braces"
        )
    return GuardSettings(namespace=namespace, buckets=CLUSTER_BUCKETS if cluster else 1)


def client_options(timeout: float) -> dict[str, float]:
    """The timeouts of ``from_url``'s client: ``timeout`` to connect and to read an answer."""
    if not isinstance(timeout, int | float) or isinstance(timeout, bool):
        raise TypeError(f"timeout must be a number of seconds, not {type(timeout).__name__}")
    if not (math.isfinite(timeout) and timeout > 0):
        raise ValueError(f"timeout must be a positive, finite number of seconds, got {timeout}")
    seconds = float(timeout)
    return {"socket_timeout": seconds, "socket_connect_timeout": seconds}
