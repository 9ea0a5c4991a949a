"""Replay guards on Redis, for servers running as several processes or hosts.

Install with `pip install 'requeststate[redis]'` (redis-py 6.0 or later; the
server must be Redis 6.2 or later):

```python
from requeststate.redis import RedisGuard

guard = RedisGuard.from_url("redis://127.0.0.1:6379/0")  # 250 ms timeouts
guard.begin()  # at start, before minting (requeststate.mcp.protect does it)
state = rs.decode(token, keys, mode="encrypted", subject=user, guard=guard)
```

A guard works with one Redis (`redis.Redis`), a Redis Cluster
(`redis.cluster.RedisCluster`: `from_url("redis+cluster://host:port")`), and a master
with replicas; docs/replay-guards.md says how to build a guard for each.

Each claim is one Lua script, atomic on the server, on a sorted set of claims
(one on a single Redis, 1,024 spread over a cluster's masters): the SHA-256 of
the token id, scored by the token's expiry plus the leeway, added unless it is
there, so that however many processes redeem the same token at once, exactly
one wins. Token ids never reach Redis. No claim carries a Redis expiry: a claim
is removed once its token expired `clock_skew` seconds ago on a verifier's
clock, so two verifiers whose clocks differ by up to `clock_skew` never both
accept a token.

An exactly-once redemption (`redeem`, then `keep`) also writes, in the same
script, the claim's record (the request's digest, the lease, then the answer),
in its claim's slot; it expires when its claim is pruned, and a record gone
sooner only refuses the retry as a replay (docs/replay-guards.md).

Redis can forget or replace its memory (a restart, with or without a snapshot;
`FLUSHALL`; a failover or a failback; an eviction; `SWAPDB`). Each set holds a
marker that names the memory holding it (the server's `run_id`, its
`master_replid`, the database) and when it began; a marker that is missing or
names another memory is written anew, dated the later of the verifier's clock
and Redis's, and every token minted before that time plus `clock_skew` (a
claim carries its token's `iat`) is refused: it may have been redeemed before.
The marker also holds the namespace's terms (`clock_skew` and the codecs'
leeway): a verifier whose own differ is refused. `begin()` writes the markers
at start, so that a new Redis accepts the first tokens.

A guard fails closed: `claim` raises `GuardUnavailable` and the token is
refused whenever it cannot tell, whatever the cause (no answer, an error
reply, this process's own pool busy past the timeout). Build your own client with
`socket_timeout` and `socket_connect_timeout` (`from_url` does), and without
retries, or a claim may wait for redis-py's defaults.
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
from ._settings import DEFAULT_CLOCK_SKEW, DEFAULT_NAMESPACE, DEFAULT_TIMEOUT, MAX_CONNECTIONS, SCHEMES
from ._sync import Client, RedisGuard

__all__ = [
    "CLUSTER_BUCKETS",
    "DEFAULT_CLOCK_SKEW",
    "DEFAULT_NAMESPACE",
    "DEFAULT_TIMEOUT",
    "MAX_CONNECTIONS",
    "SCHEMES",
    "AsyncClient",
    "AsyncRedisGuard",
    "ClaimLocation",
    "Client",
    "RedisGuard",
    "claim_location",
]
