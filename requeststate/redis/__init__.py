"""Replay guards on Redis, for servers running as several processes or hosts.

Install with `pip install 'requeststate[redis]'` (redis-py 6.0 or later; the
server must be Redis 6.2 or later):

```python
from requeststate.redis import RedisGuard

guard = RedisGuard.from_url("redis://127.0.0.1:6379/0")  # 250 ms timeouts
state = rs.decode(token, keys, mode="encrypted", subject=user, guard=guard)
```

A guard works with one Redis (`redis.Redis`), a Redis Cluster
(`redis.cluster.RedisCluster`: `from_url(url, cluster=True)`), and a master
with replicas; docs/replay-guards.md says how to build a guard for each.

Each claim is one Lua script, atomic on the server: `SET key 1 NX EX seconds`,
so that however many processes redeem the same token at once, exactly one
wins, and a read of the store's marker (below). The key is
`namespace + ":" + sha256(token_id)` in hex: token ids never reach Redis, and
every key has the same length. Its lifetime is relative, computed from the
verifier's clock (`expires_at - now + 1` seconds), never an absolute time that
Redis would judge by its own clock: a verifier whose clock is behind Redis's
would write an expiry Redis already sees as past, and the key would vanish at
once. The extra second keeps the id claimed through the whole of second
`expires_at`, whatever fraction of second `now` had gone by.

Replication is asynchronous: a master that acknowledges a claim and dies
before a replica copies it leaves the promoted replica without the claim.
`replicas=N` closes that window: the claim counts only once `N` replicas
acknowledged it (`WAIT N timeout` on the connection that wrote it); the
claim's own answer is read first, so a replay is refused however `WAIT` ends,
and a first claim that `WAIT` did not confirm fails closed with
`GuardUnavailable`.

Redis can also forget every claim at once: a restart without persistence,
`FLUSHALL`, a failover to an empty replica. Each claim reads a marker that
lives with the claims (one per hash slot in a cluster); a guard that finds the
marker it saw gone or replaced refuses every token that may have been redeemed
before the loss (those that expire within `max_token_lifetime` of the new
marker's creation), logs one warning, and records the refusal in the marker for
the other processes. A process that never saw the store cannot tell a new Redis
from one that forgot (docs/replay-guards.md says what that leaves open).
`max_token_lifetime` (default 360 s) must cover the codecs' `ttl + leeway`: a
`Codec` refuses a guard that would refuse its tokens.

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
defaults (seconds, with retries and backoff).
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
from ._keys import ClaimLocation, claim_location
from ._options import (
    CLUSTER_BUCKETS,
    DEFAULT_CLOCK_SKEW,
    DEFAULT_MAX_TOKEN_LIFETIME,
    DEFAULT_NAMESPACE,
    DEFAULT_TIMEOUT,
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
    "RedisGuard",
    "claim_location",
]
