"""A Redis guard's options, checked once at construction, and the client options ``from_url`` sets."""

from __future__ import annotations

import math
from typing import Final, NamedTuple

from requeststate import DEFAULT_TTL, MAX_TTL
from requeststate._seam import check_int

__all__ = [
    "CLUSTER_BUCKETS",
    "DEFAULT_CLOCK_SKEW",
    "DEFAULT_MAX_TOKEN_LIFETIME",
    "DEFAULT_NAMESPACE",
    "DEFAULT_TIMEOUT",
    "MAX_SECONDS",
    "GuardSettings",
    "check_seconds",
    "check_settings",
    "client_options",
    "describe",
]

DEFAULT_NAMESPACE: Final = "requeststate"
"""The prefix of every key a guard writes, unless ``namespace=`` says otherwise."""
DEFAULT_TIMEOUT: Final = 0.25
"""Seconds ``from_url``'s client waits to connect or for an answer, and a claim waits for replicas."""
DEFAULT_CLOCK_SKEW: Final = 5
"""Seconds that any two hosts' clocks (those that mint and those that verify) may differ by,
unless ``clock_skew=`` says otherwise. A claim is kept this long past its token's expiry, and a
token must be minted this long after Redis's memory began."""
DEFAULT_MAX_TOKEN_LIFETIME: Final = DEFAULT_TTL + 60
"""The ``max_token_lifetime`` of a guard that no ``Codec`` told its ``ttl + leeway``: a codec's
default ``ttl`` (300 s) and a minute. It dates only tokens whose id does not tell when they were
minted (another writer's, an older release's)."""
CLUSTER_BUCKETS: Final = 1024
"""How many sorted sets a cluster guard spreads its claims over (one, on a single Redis)."""
# Scores are doubles in Redis: the times a guard writes stay below 2**53, where every second
# is exact (285 million years).
MAX_SECONDS: Final = 2**53 - 1


class GuardSettings(NamedTuple):
    """A guard's options, checked."""

    namespace: str
    fail_open: bool
    replicas: int
    wait_ms: int
    """``replica_timeout`` in whole milliseconds, as ``WAIT`` takes it."""
    max_token_lifetime: int | None
    """As given; ``None``: the longest ``ttl + leeway`` that a ``Codec`` told the guard."""
    clock_skew: int
    allow_eviction: bool
    buckets: int
    """How many sorted sets hold the claims: ``CLUSTER_BUCKETS`` on a Redis Cluster, else 1."""


def check_settings(
    namespace: str,
    fail_open: bool,
    replicas: int,
    replica_timeout: float,
    max_token_lifetime: int | None,
    clock_skew: int,
    allow_eviction: bool,
    *,
    cluster: bool,
) -> GuardSettings:
    """Every option checked by type and range; ``TypeError`` or ``ValueError`` naming the one at fault."""
    if not isinstance(namespace, str):
        raise TypeError(f"namespace must be a str, not {type(namespace).__name__}")
    if not namespace:
        raise ValueError("namespace must not be empty")
    if cluster and "{" in namespace:
        raise ValueError(
            f"namespace {namespace!r} must not contain '{{' with a Redis Cluster: a hash tag in it would "
            "put every bucket of claims in one slot; choose a namespace without braces"
        )
    for name, flag in (("fail_open", fail_open), ("allow_eviction", allow_eviction)):
        if not isinstance(flag, bool):
            raise TypeError(f"{name} must be a bool, not {type(flag).__name__}")
    check_int("replicas", replicas, 0)
    # WAIT takes whole milliseconds, and WAIT n 0 would block forever: round up.
    wait_ms = math.ceil(check_seconds("replica_timeout", replica_timeout) * 1000)
    if max_token_lifetime is not None:
        check_int("max_token_lifetime", max_token_lifetime, 1, MAX_TTL * 2)
    check_int("clock_skew", clock_skew, 0, MAX_TTL)
    buckets = CLUSTER_BUCKETS if cluster else 1
    return GuardSettings(
        namespace, fail_open, replicas, wait_ms, max_token_lifetime, clock_skew, allow_eviction, buckets
    )


def check_seconds(name: str, seconds: float) -> float:
    """``seconds`` as a float if it is a positive, finite number (not a bool); else raise."""
    if not isinstance(seconds, int | float) or isinstance(seconds, bool):
        raise TypeError(f"{name} must be a number of seconds, not {type(seconds).__name__}")
    if not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"{name} must be a positive, finite number of seconds, got {seconds}")
    return float(seconds)


def client_options(timeout: float, replicas: int, replica_timeout: float) -> dict[str, float]:
    """The timeouts of ``from_url``'s client: ``timeout`` to connect and to read an answer.

    A guard that waits for replicas reads ``WAIT``'s answer up to ``replica_timeout`` later,
    so its read timeout is ``timeout + replica_timeout``; without replicas it is ``timeout``.
    """
    seconds = check_seconds("timeout", timeout)
    waited = check_seconds("replica_timeout", replica_timeout) if replicas else 0.0
    return {"socket_timeout": seconds + waited, "socket_connect_timeout": seconds}


def describe(name: str, settings: GuardSettings) -> str:
    """A guard's repr: its class and the options that differ from a plain guard's, never a password."""
    shown = [f"namespace={settings.namespace!r}", f"fail_open={settings.fail_open}"]
    if settings.replicas:
        shown.append(f"replicas={settings.replicas}")
    if settings.max_token_lifetime is not None:
        shown.append(f"max_token_lifetime={settings.max_token_lifetime}")
    if settings.clock_skew != DEFAULT_CLOCK_SKEW:
        shown.append(f"clock_skew={settings.clock_skew}")
    if settings.allow_eviction:
        shown.append("allow_eviction=True")
    return f"{name}({', '.join(shown)})"
