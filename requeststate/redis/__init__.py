"""Replay guards on Redis, for servers running as several processes or hosts.

Install with `pip install 'requeststate[redis]'` (redis-py 6.0 or later; the
server must be Redis 6.2 or later):

```python
from requeststate.redis import RedisGuard

guard = RedisGuard.from_url("redis://127.0.0.1:6379/0")  # 250 ms timeouts
guard.begin()  # at start, before minting
state = rs.decode(token, keys, mode="encrypted", subject=user, guard=guard)
```

A guard works with one Redis (`redis.Redis`), a Redis Cluster
(`redis.cluster.RedisCluster`: `from_url(url, cluster=True)`), and a master
with replicas; docs/replay-guards.md says how to build a guard for each.

Each claim is one Lua script, atomic on the server, on a sorted set of claims
(one on a single Redis, 1,024 spread over a cluster's masters): the SHA-256 of
the token id, scored by the token's expiry, added unless it is there, so that
however many processes redeem the same token at once, exactly one wins. Token
ids never reach Redis. Nothing carries a Redis expiry: a claim is removed once
its token expired `clock_skew` seconds ago on a verifier's clock, so Redis's
clock plays no part, and two verifiers whose clocks differ by up to
`clock_skew` never both accept a token.

Redis can forget (a restart, with or without a snapshot; `FLUSHALL`; a
failover; an eviction). Each set holds a marker that names the server process
holding it (`run_id`) and when its memory began; a marker that is missing or
another server's is written anew, and every token minted before that time
plus `clock_skew` (token ids tell when they were minted) is refused: it may
have been redeemed before. No process has to remember anything, so a process
started after the loss, or a fleet restarted with its Redis, refuses every
replay, and a flow started after the loss works at once. `begin()` writes the
markers at start, so that a new Redis accepts the first tokens.

A guard fails closed: `claim` raises `GuardUnavailable` and the token is
refused whenever it cannot tell. `fail_open=True` accepts tokens unchecked,
with a warning on the `requeststate.redis` logger for each, only when no Redis
answered: the server unreachable (`ConnectionError`, a cluster no node of
which answers, or with no node for the slot) or silent past the client's
timeout (`TimeoutError`); never this process's own pool, full. Every
answer is obeyed, an error reply included (`-LOADING`, `-OOM`, `-READONLY`,
`-NOPERM`, `-WRONGPASS`, `-MASTERDOWN`, `-CLUSTERDOWN`, a `MOVED`): it is a
configuration to fix or a claim not made durable, not an outage to ride out.
Build your own client with `socket_timeout` and `socket_connect_timeout`
(`from_url` does), and without retries, or a claim may wait for redis-py's
defaults (seconds, with retries and backoff). A Redis whose `maxmemory-policy`
may evict claims (`allkeys-*`) is refused unless `allow_eviction=True`.
`replicas=N` makes each claim wait until `N` replicas acknowledged it.
"""

from __future__ import annotations

try:  # the extra's presence, checked before the guards import it
    import redis
    import redis.asyncio.cluster
    import redis.cluster  # noqa: F401
except ImportError as missing:  # the extra is not installed
    raise ImportError(
        "requeststate.redis needs the redis extra: pip install 'requeststate[redis]'", name=missing.name
    ) from missing

from ._async import AsyncClient, AsyncRedisGuard
from ._buckets import CLUSTER_BUCKETS, ClaimLocation, claim_location
from ._settings import (
    DEFAULT_CLOCK_SKEW,
    DEFAULT_MAX_TOKEN_LIFETIME,
    DEFAULT_NAMESPACE,
    DEFAULT_TIMEOUT,
    GuardOptions,
)
from ._sync import Client, RedisGuard

__all__ = [
    "CLUSTER_BUCKETS",
    "DEFAULT_CLOCK_SKEW",
    "DEFAULT_MAX_TOKEN_LIFETIME",
    "DEFAULT_NAMESPACE",
    "DEFAULT_TIMEOUT",
    "AsyncClient",
    "AsyncRedisGuard",
    "ClaimLocation",
    "Client",
    "GuardOptions",
    "RedisGuard",
    "claim_location",
]
