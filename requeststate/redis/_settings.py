"""A Redis guard's options, declared once (``GuardOptions``) and checked once (``check_settings``) at
construction, and the client options ``from_url`` sets."""

from __future__ import annotations

import math
from typing import Final, NamedTuple, TypedDict

from requeststate import DEFAULT_TTL, MAX_TTL
from requeststate._seam import check_int, refuse_unknown

from ._buckets import CLUSTER_BUCKETS

__all__ = [
    "DEFAULT_CLOCK_SKEW",
    "DEFAULT_MAX_TOKEN_LIFETIME",
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
"""Seconds ``from_url``'s client waits to connect or for an answer, and a claim waits for replicas."""
DEFAULT_CLOCK_SKEW: Final = 5
"""Seconds that any two hosts' clocks (those that mint and those that verify) may differ by,
unless ``clock_skew=`` says otherwise. A claim is kept this long past its token's expiry, and a
token must be minted this long after Redis's memory began."""
DEFAULT_MAX_TOKEN_LIFETIME: Final = DEFAULT_TTL + 60
"""The ``max_token_lifetime`` of a guard that no ``Codec`` told its ``ttl + leeway``: a codec's
default ``ttl`` (300 s) and a minute. It dates only tokens whose id does not tell when they were
minted (another writer's, an older release's)."""


class GuardOptions(TypedDict, total=False):
    """The options of ``RedisGuard`` and ``AsyncRedisGuard`` beside the client: one declaration for both.

    Both guards' constructors and ``from_url`` take these names (``from_url``
    also takes ``cluster`` and ``timeout``, for the client it builds), and each is
    checked when the guard is built, never per claim.
    """

    namespace: str
    """The prefix of every key the guard writes, one per application sharing a Redis; no ``{``
    with a Redis Cluster. Default ``DEFAULT_NAMESPACE``."""
    fail_open: bool
    """If no Redis answers (unreachable, or silent past the client's timeout), accept the token
    unchecked and log a warning, instead of raising ``GuardUnavailable``. Every answer Redis
    gives, an error reply included, is still obeyed. Default ``False``."""
    replicas: int
    """How many replicas must acknowledge a claim before it counts; 0 (the default) does not wait."""
    replica_timeout: float
    """How long, in seconds, to wait for them; the client's ``socket_timeout`` must be longer,
    or a shortfall shows as a timeout. Default ``DEFAULT_TIMEOUT``."""
    max_token_lifetime: int | None
    """The most seconds a token lives after it is redeemed (the codecs' ``ttl + leeway``; a
    longer-lived token is refused). After Redis lost its claims, tokens that expire within this
    long are refused. Default ``None``: the longest ``ttl + leeway`` that a ``Codec`` built with
    the guard told it (``DEFAULT_MAX_TOKEN_LIFETIME`` until one does)."""
    clock_skew: int
    """Seconds that any two hosts' clocks may differ by; default ``DEFAULT_CLOCK_SKEW``."""
    allow_eviction: bool
    """Claim on a Redis whose ``maxmemory-policy`` may evict claims (``allkeys-*``), which is
    refused otherwise; an evicted claim is then a loss of Redis's memory. Default ``False``."""


_OPTION_NAMES: Final = frozenset(GuardOptions.__optional_keys__)


class GuardSettings(NamedTuple):
    """``GuardOptions`` checked, with every default filled in."""

    namespace: str
    fail_open: bool
    replicas: int
    replica_timeout: float
    max_token_lifetime: int | None
    """As given; ``None``: the longest ``ttl + leeway`` that a ``Codec`` told the guard."""
    clock_skew: int
    allow_eviction: bool
    buckets: int
    """How many sorted sets hold the claims: ``CLUSTER_BUCKETS`` on a Redis Cluster, else 1."""

    @property
    def wait_ms(self) -> int:
        """``replica_timeout`` in whole milliseconds, as ``WAIT`` takes it.

        Rounded up: ``WAIT n 0`` would block forever.
        """
        return math.ceil(self.replica_timeout * 1000)


def check_settings(options: GuardOptions, *, cluster: bool) -> GuardSettings:
    """Every option checked, by name, type and range, and the defaults filled in.

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
    fail_open, allow_eviction = options.get("fail_open", False), options.get("allow_eviction", False)
    for name, flag in (("fail_open", fail_open), ("allow_eviction", allow_eviction)):
        if not isinstance(flag, bool):
            raise TypeError(f"{name} must be a bool, not {type(flag).__name__}")
    replicas = check_int("replicas", options.get("replicas", 0), 0)
    replica_timeout = _check_seconds("replica_timeout", options.get("replica_timeout", DEFAULT_TIMEOUT))
    max_token_lifetime = options.get("max_token_lifetime")
    if max_token_lifetime is not None:
        check_int("max_token_lifetime", max_token_lifetime, 1, MAX_TTL * 2)
    clock_skew = check_int("clock_skew", options.get("clock_skew", DEFAULT_CLOCK_SKEW), 0, MAX_TTL)
    return GuardSettings(
        namespace=namespace,
        fail_open=fail_open,
        replicas=replicas,
        replica_timeout=replica_timeout,
        max_token_lifetime=max_token_lifetime,
        clock_skew=clock_skew,
        allow_eviction=allow_eviction,
        buckets=CLUSTER_BUCKETS if cluster else 1,
    )


def client_options(timeout: float, settings: GuardSettings) -> dict[str, float]:
    """The timeouts of ``from_url``'s client: ``timeout`` to connect and to read an answer.

    A guard that waits for replicas reads ``WAIT``'s answer up to ``replica_timeout`` later,
    so its read timeout is ``timeout + replica_timeout``; without replicas it is ``timeout``.
    """
    seconds = _check_seconds("timeout", timeout)
    waited = settings.replica_timeout if settings.replicas else 0.0
    return {"socket_timeout": seconds + waited, "socket_connect_timeout": seconds}


def _check_seconds(name: str, seconds: float) -> float:
    """``seconds`` as a float if it is a positive, finite number (not a bool); else raise."""
    if not isinstance(seconds, int | float) or isinstance(seconds, bool):
        raise TypeError(f"{name} must be a number of seconds, not {type(seconds).__name__}")
    if not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"{name} must be a positive, finite number of seconds, got {seconds}")
    return float(seconds)
