"""``RedisGuard``: the replay guard on a sync redis-py client, one Redis or a Redis Cluster."""

from __future__ import annotations

import time
from typing import Any, Final, TypeAlias, Unpack, final

import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.cluster
from redis.backoff import NoBackoff
from redis.retry import Retry

from ._base import GuardBase
from ._ledger import CLAIM_SCRIPT, ERRORS, Claim, log, not_begun
from ._settings import GuardOptions

__all__ = ["Client", "RedisGuard"]

Client: TypeAlias = "redis.Redis | redis.cluster.RedisCluster"
"""What ``RedisGuard`` claims through: one Redis (or a master), or a Redis Cluster."""


@final
class RedisGuard(GuardBase[Client]):
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

    __slots__ = ("_script",)

    def __init__(self, client: Client, **options: Unpack[GuardOptions]) -> None:
        """Guard with ``client``, a sync ``redis.Redis`` or ``redis.cluster.RedisCluster``.

        An asyncio client needs ``AsyncRedisGuard``. The options are ``GuardOptions``.

        Raises:
            TypeError, ValueError: a client of another kind, or a bad option (all are checked here).
        """
        super().__init__(client, **options)
        # EVALSHA, and the script itself only when Redis does not have it yet (NOSCRIPT: not run).
        self._script: Final = client.register_script(CLAIM_SCRIPT)

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
        try:
            reply, acknowledged = self._send(claim)
        except ERRORS as error:
            return ledger.failed(claim, error)
        outcome = ledger.read(reply)
        if ledger.marks_every_bucket(outcome):
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
            raise not_begun(error) from error
        return self._ledger.began(replies)

    def close(self) -> None:
        """Close the client and its connections."""
        self._client.close()

    @staticmethod
    def _check_client(client: object) -> bool:
        if not isinstance(client, redis.Redis | redis.cluster.RedisCluster):
            asyncio_client = isinstance(client, redis.asyncio.Redis | redis.asyncio.cluster.RedisCluster)
            raise TypeError(
                "client must be a redis.Redis or redis.cluster.RedisCluster, "
                f"not {type(client).__name__}{': use AsyncRedisGuard' if asyncio_client else ''}"
            )
        return isinstance(client, redis.cluster.RedisCluster)

    @classmethod
    def _connect(cls, url: str, *, cluster: bool, timeouts: dict[str, Any]) -> Client:
        kind = redis.cluster.RedisCluster if cluster else redis.Redis
        return kind.from_url(url, retry=Retry(NoBackoff(), 0), **timeouts)

    def _send(self, claim: Claim) -> tuple[object, object]:
        """The script's reply, and ``WAIT``'s (or the error in its place) if the guard waits for replicas."""
        if not self._ledger.settings.replicas:
            return self._script(keys=[claim.key], args=claim.args), None
        try:
            return self._claim_and_wait(claim)
        except ERRORS:
            if isinstance(self._client, redis.cluster.RedisCluster):
                _refresh_slots(self._client)
            raise

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
        pool = client.connection_pool
        connection = pool.get_connection()
        both_read = False
        try:
            commands = self._ledger.commands_with_wait(claim)
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


def _refresh_slots(client: redis.cluster.RedisCluster) -> None:
    # A claim that went straight to a master failed: the master may be gone or the slot moved, and
    # only the cluster client's own commands would notice. Read the slot map again; if no node
    # answers, the claim fails closed all the same and the next one tries again.
    try:
        client.nodes_manager.initialize()
    except ERRORS:
        log.debug("Redis Cluster slot map not refreshed: no node answered")
