"""A Redis guard's options, checked once at construction, and the client options ``from_url`` sets."""

from __future__ import annotations

import math
from typing import Final, NamedTuple

from requeststate._options import DEFAULT_TTL, check_int

__all__ = [
    "DEFAULT_MAX_TOKEN_LIFETIME",
    "DEFAULT_NAMESPACE",
    "DEFAULT_TIMEOUT",
    "MAX_SECONDS",
    "Options",
    "check_options",
    "check_seconds",
    "client_options",
    "describe",
]

DEFAULT_NAMESPACE: Final = "requeststate"
"""The prefix of every key a guard writes, unless ``namespace=`` says otherwise."""
DEFAULT_TIMEOUT: Final = 0.25
"""Seconds ``from_url``'s client waits to connect or for an answer, and a claim waits for replicas."""
DEFAULT_MAX_TOKEN_LIFETIME: Final = DEFAULT_TTL + 60
"""Seconds a token can live after it is redeemed, unless ``max_token_lifetime=`` says otherwise:
a codec's default ``ttl`` (300 s) and a minute for its leeway and the skew between hosts' clocks.
It is also how long tokens stay refused after Redis lost its claims. A ``Codec`` whose
``ttl + leeway`` is longer refuses the guard at construction, naming the value to set."""
# Redis refuses an expiry whose time in milliseconds, added to its clock, passes 2**63 - 1;
# this bound (146 million years) leaves room for any clock it will ever read.
MAX_SECONDS: Final = 2**62 // 1000


class Options(NamedTuple):
    """A guard's options, checked."""

    namespace: str
    fail_open: bool
    replicas: int
    wait_ms: int
    """``replica_timeout`` in whole milliseconds, as ``WAIT`` takes it."""
    max_token_lifetime: int
    cluster: bool
    """Whether the client is a Redis Cluster's: the guard keeps one marker per hash slot."""


def check_options(
    namespace: str,
    fail_open: bool,
    replicas: int,
    replica_timeout: float,
    max_token_lifetime: int,
    *,
    cluster: bool,
) -> Options:
    """Every option checked by type and range; ``TypeError`` or ``ValueError`` naming the one at fault."""
    if not isinstance(namespace, str):
        raise TypeError(f"namespace must be a str, not {type(namespace).__name__}")
    if not namespace:
        raise ValueError("namespace must not be empty")
    if cluster and "{" in namespace:
        raise ValueError(
            f"namespace {namespace!r} must not contain '{{' with a Redis Cluster: the guard's marker keys "
            "carry a hash tag that must decide their slot; choose a namespace without braces"
        )
    if not isinstance(fail_open, bool):
        raise TypeError(f"fail_open must be a bool, not {type(fail_open).__name__}")
    check_int("replicas", replicas, 0)
    # WAIT takes whole milliseconds, and WAIT n 0 would block forever: round up.
    wait_ms = math.ceil(check_seconds("replica_timeout", replica_timeout) * 1000)
    lifetime = check_int("max_token_lifetime", max_token_lifetime, 1, MAX_SECONDS)
    return Options(namespace, fail_open, replicas, wait_ms, lifetime, cluster)


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


def describe(name: str, options: Options) -> str:
    """A guard's repr: its class and the options that differ from a plain guard's, never a password."""
    shown = [f"namespace={options.namespace!r}", f"fail_open={options.fail_open}"]
    if options.replicas:
        shown.append(f"replicas={options.replicas}")
    if options.max_token_lifetime != DEFAULT_MAX_TOKEN_LIFETIME:
        shown.append(f"max_token_lifetime={options.max_token_lifetime}")
    return f"{name}({', '.join(shown)})"
