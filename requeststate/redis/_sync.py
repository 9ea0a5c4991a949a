"""``RedisGuard``: the replay guard on a sync redis-py client, one Redis or a Redis Cluster."""

from __future__ import annotations

import time
from typing import Any, Final, TypeAlias, final

import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.cluster
from redis.backoff import NoBackoff
from redis.retry import Retry

from requeststate import GuardUnavailable

from ._ledger import CLAIM_SCRIPT, ERRORS, Claim, Ledger, log
from ._settings import (
    DEFAULT_CLOCK_SKEW,
    DEFAULT_NAMESPACE,
    DEFAULT_TIMEOUT,
    check_settings,
    client_options,
    describe,
)

__all__ = ["Client", "RedisGuard"]

Client: TypeAlias = "redis.Redis | redis.cluster.RedisCluster"
"""What ``RedisGuard`` claims through: one Redis (or a master), or a Redis Cluster."""


@final
class RedisGuard:
    """A replay guard on a Redis client, shared by every process that uses that Redis.

    ``client`` is a ``redis.Redis`` (one Redis, or the master of a replicated
    one) or a ``redis.cluster.RedisCluster``. Thread-safe (redis-py's
    connection pools are). Give the client bounded timeouts and no retries, or
    use ``from_url``: a claim waits at most as long as the client does. Use one
    ``namespace`` per application sharing a Redis, one guard per process, and
    call ``begin()`` when the process starts. Calling ``close()`` closes the client.

    With ``replicas=N`` a claim counts only once ``N`` replicas acknowledged
    it, so that it survives the failover of its master. The claim and its
    ``WAIT`` go on one connection (``WAIT`` counts the writes of its own
    connection), to the master that owns the key's slot in a cluster, and the
    claim's own answer is read first: an id already claimed is a replay,
    whatever ``WAIT`` answers or however late. When fewer than ``N`` replicas
    acknowledge a first claim within ``replica_timeout``, when ``WAIT``'s
    answer is not read (a timeout, a dropped connection), or when the slot
    moved meanwhile, ``claim`` raises ``GuardUnavailable`` whatever
    ``fail_open`` says, and the key stays written: that token stays refused
    until it expires, and no token is ever accepted on a claim a failover can
    lose.
    """

    __slots__ = ("_client", "_ledger", "_script")

    def __init__(
        self,
        client: Client,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        fail_open: bool = False,
        replicas: int = 0,
        replica_timeout: float = DEFAULT_TIMEOUT,
        max_token_lifetime: int | None = None,
        clock_skew: int = DEFAULT_CLOCK_SKEW,
        allow_eviction: bool = False,
    ) -> None:
        """Guard with ``client``.

        Args:
            client: a sync ``redis.Redis`` or ``redis.cluster.RedisCluster``
                (an asyncio client needs ``AsyncRedisGuard``).
            namespace: the prefix of every key this guard writes (no ``{`` in a cluster).
            fail_open: if no Redis answers (unreachable, or silent past the
                client's timeout), accept the token unchecked and log a warning,
                instead of raising ``GuardUnavailable``. Every answer Redis
                gives, an error reply included, is still obeyed.
            replicas: how many replicas must acknowledge a claim before it
                counts; 0 (the default) does not wait.
            replica_timeout: how long, in seconds, to wait for them; the
                client's ``socket_timeout`` must be longer, or a shortfall
                shows as a timeout.
            max_token_lifetime: the most seconds a token lives after it is
                redeemed (the codecs' ``ttl + leeway``; a longer-lived token is
                refused). After Redis lost its claims, tokens that expire
                within this long are refused.
        """
        if not isinstance(client, redis.Redis | redis.cluster.RedisCluster):
            asyncio_client = isinstance(client, redis.asyncio.Redis | redis.asyncio.cluster.RedisCluster)
            raise TypeError(
                "client must be a redis.Redis or redis.cluster.RedisCluster, "
                f"not {type(client).__name__}{': use AsyncRedisGuard' if asyncio_client else ''}"
            )
        cluster = isinstance(client, redis.cluster.RedisCluster)
        settings = check_settings(
            namespace,
            fail_open,
            replicas,
            replica_timeout,
            max_token_lifetime,
            clock_skew,
            allow_eviction,
            cluster=cluster,
        )
        self._ledger: Final = Ledger(settings)
        self._client: Final = client
        # EVALSHA, and the script itself only when Redis does not have it yet (NOSCRIPT: not run).
        self._script: Final = client.register_script(CLAIM_SCRIPT)

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        cluster: bool = False,
        timeout: float = DEFAULT_TIMEOUT,
        namespace: str = DEFAULT_NAMESPACE,
        fail_open: bool = False,
        replicas: int = 0,
        replica_timeout: float = DEFAULT_TIMEOUT,
        max_token_lifetime: int | None = None,
        clock_skew: int = DEFAULT_CLOCK_SKEW,
        allow_eviction: bool = False,
    ) -> RedisGuard:
        """A guard on a new client for ``url``, waiting at most ``timeout`` seconds to connect or answer.

        ``cluster=True`` builds a ``redis.cluster.RedisCluster`` from the URL of
        any node of the cluster (it connects at once, to read the slot map).
        With ``replicas``, the read timeout is ``timeout + replica_timeout``, so
        that ``WAIT``'s answer arrives before it. The client does not retry: a
        retried claim whose first answer was lost would read the guard's own
        claim as a replay.
        """
        options: dict[str, Any] = client_options(timeout, replicas, replica_timeout)
        client: Client
        if cluster:
            client = redis.cluster.RedisCluster.from_url(url, retry=Retry(NoBackoff(), 0), **options)
        else:
            client = redis.Redis.from_url(url, retry=Retry(NoBackoff(), 0), **options)
        return cls(
            client,
            namespace=namespace,
            fail_open=fail_open,
            replicas=replicas,
            replica_timeout=replica_timeout,
            max_token_lifetime=max_token_lifetime,
            clock_skew=clock_skew,
            allow_eviction=allow_eviction,
        )

    @property
    def client(self) -> Client:
        """The client this guard claims through."""
        return self._client

    @property
    def max_token_lifetime(self) -> int:
        """The longest a token lives: as given, else the longest ``ttl + leeway`` a ``Codec`` told."""
        return self._ledger.max_token_lifetime

    def learn_lifetime(self, lifetime: int) -> None:
        """Called by each ``Codec`` built with this guard, with its ``ttl + leeway``.

        Raises:
            ValueError: ``lifetime`` is longer than the ``max_token_lifetime`` given.
        """
        self._ledger.learn_lifetime(lifetime)

    def claim(self, token_id: str, expires_at: int, now: int, /) -> bool:
        """Record ``token_id`` until ``expires_at``; ``True`` on its first claim, ``False`` on a replay.

        Raises:
            GuardUnavailable: Redis did not record the claim, fewer than
                ``replicas`` replicas acknowledged it, the token was minted
                before Redis's memory of the claims began (plus ``clock_skew``)
                or after ``now`` plus ``clock_skew``, Redis may evict claims,
                or a token that does not tell its mint time (no ``iat``) lives
                past ``max_token_lifetime`` (unless ``fail_open`` and no Redis
                answered: then ``True``).
            ValueError: ``expires_at`` is before ``now``.
        """
        ledger = self._ledger
        claim = ledger.prepare(token_id, expires_at, now)
        acknowledged: object = None
        try:
            if ledger.settings.replicas:
                reply, acknowledged = self._claim_and_wait(claim)
            else:
                reply = self._script(keys=[claim.key], args=claim.args)
        except ERRORS as error:
            if ledger.settings.replicas and isinstance(self._client, redis.cluster.RedisCluster):
                _refresh_slots(self._client)
            return ledger.failed(claim, error)
        outcome = ledger.read(reply)
        if outcome.began_here and ledger.settings.buckets > 1:
            # One bucket's memory began here, so the others' may have too (a master that
            # restarted, a new cluster): marked now, each accepts the tokens minted from now on.
            # A bucket left unmarked is marked by its next claim all the same.
            try:
                self._mark(now)
            except ERRORS as error:
                log.debug("Redis Cluster buckets not all marked (%s)", type(error).__name__)
        return ledger.settle(claim, outcome, acknowledged)

    def begin(self, now: int | None = None) -> int:
        """Record in Redis that its memory of the claims begins now, where it has no record: call at start.

        A token is accepted only if it was minted more than ``clock_skew`` seconds
        after Redis's memory of the claims began; a claim that finds no record writes
        one, and refuses its own token. Call ``begin`` when the server starts, before
        it mints: on a new Redis (a first deploy), every token minted from the second
        it returns is accepted at its first claim. Where Redis has a record of its
        own, nothing changes. ``now``: unix seconds; the clock when ``None``.

        Returns:
            The first unix second whose tokens are accepted: ``now + clock_skew + 1``
            on a Redis with no record, earlier where the memory began before.

        Raises:
            GuardUnavailable: Redis did not answer, or may evict claims (see ``allow_eviction``).
        """
        try:
            replies = self._mark(int(time.time()) if now is None else now)
        except ERRORS as error:
            raise GuardUnavailable(
                f"Redis did not record when its memory began ({type(error).__name__})"
            ) from error
        return self._ledger.began(replies)

    def _mark(self, now: int) -> list[object]:
        """Write each bucket's marker that is missing or not its server's; the script's replies."""
        ledger, client = self._ledger, self._client
        if not isinstance(client, redis.cluster.RedisCluster):
            key = ledger.bucket_keys[0]
            return [self._script(keys=[key], args=ledger.marker(key, now).args)]
        sha = client.script_load(CLAIM_SCRIPT)  # to every master
        # One batch per master, on its own connection: the cluster client's pipeline() warns on
        # redis-py 6.0 (its own deprecated argument).
        by_master: dict[str, tuple[Any, list[str]]] = {}
        for key in ledger.bucket_keys:
            node = client.get_node_from_key(key)  # type: ignore[no-untyped-call]  # untyped in redis-py
            by_master.setdefault(node.name, (node, []))[1].append(key)
        replies: list[object] = []
        for node, keys in by_master.values():
            with client.get_redis_connection(node).pipeline(transaction=False) as batch:
                for key in keys:
                    batch.evalsha(sha, 1, key, *ledger.marker(key, now).args)
                replies += batch.execute(raise_on_error=False)
        return replies

    def _claim_and_wait(self, claim: Claim) -> tuple[object, object]:
        """The script's reply and ``WAIT``'s (or the error in its place), sent together on one connection."""
        client = self._client
        if isinstance(client, redis.cluster.RedisCluster):
            # Both commands to the key's master; the cluster client would follow a MOVED on its own,
            # sending the claim to another master than the WAIT.
            node = client.get_node_from_key(claim.key)  # type: ignore[no-untyped-call]  # untyped in redis-py
            client = client.get_redis_connection(node)
        settings = self._ledger.settings
        pool = client.connection_pool
        connection = pool.get_connection()
        both_read = False
        try:
            commands = [
                # EVAL, not EVALSHA: a batch sent at once has no turn to load a script Redis lacks.
                ("EVAL", CLAIM_SCRIPT, 1, claim.key, *claim.args),
                ("WAIT", settings.replicas, settings.wait_ms),
            ]
            packed = connection.pack_commands(commands)  # type: ignore[no-untyped-call]  # untyped in redis-py
            connection.send_packed_command(packed)  # type: ignore[no-untyped-call]  # untyped in redis-py
            # The claim's own answer first (an error reply raises here): once read, nothing that
            # happens to WAIT can turn a replay into a first claim.
            reply = connection.read_response()
            try:
                acknowledged: object = connection.read_response()
            except ERRORS as error:
                return reply, error
            both_read = True
            return reply, acknowledged
        finally:
            if not both_read:  # a reply may still be on its way: never reuse the socket
                connection.disconnect()  # type: ignore[no-untyped-call]  # untyped in redis-py
            pool.release(connection)

    def close(self) -> None:
        """Close the client and its connections."""
        self._client.close()

    def __repr__(self) -> str:
        return describe("RedisGuard", self._ledger.settings)


def _refresh_slots(client: redis.cluster.RedisCluster) -> None:
    # A claim that went straight to a master failed: the master may be gone or the slot moved, and
    # only the cluster client's own commands would notice. Read the slot map again; if no node
    # answers, the claim fails closed all the same and the next one tries again.
    try:
        client.nodes_manager.initialize()
    except ERRORS:
        log.debug("Redis Cluster slot map not refreshed: no node answered")
