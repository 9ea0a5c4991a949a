"""``RedisGuard``: the replay guard on a sync redis-py client, one Redis or a Redis Cluster."""

from __future__ import annotations

import time
from typing import Any, TypeAlias, final

import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.cluster
from redis.backoff import NoBackoff
from redis.retry import Retry

from requeststate import ClaimId
from requeststate._seam import Answer

from ._base import GuardBase
from ._script import CLAIM_SCRIPT, ERRORS, log, unanswered
from ._settings import MAX_CONNECTIONS

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
    call ``begin()`` when the process starts (``requeststate.mcp.protect`` does).
    Calling ``close()`` closes the client.
    """

    __slots__ = ()

    def claim(self, claimed: ClaimId, expires_at: int, now: int, /) -> bool:
        """Record ``claimed`` until ``expires_at``; ``True`` on its first claim, ``False`` on a replay.

        Raises:
            GuardUnavailable: Redis did not record the claim or answered an error, or the
                namespace's verifiers use another ``clock_skew`` or leeway.
            InvalidToken: ``outside_memory``: the token was minted before Redis's memory of
                the claims began (plus ``clock_skew``), or after ``now`` plus ``clock_skew``.
            ValueError: ``expires_at`` is before ``now``.
        """
        prepared = self._prepare(claimed, expires_at, now)
        if prepared is None:
            return False
        claim, keys, args = prepared
        return self._ledger.settle(claim, self._run(keys, args, now))

    def redeem(
        self, claimed: ClaimId, expires_at: int, now: int, request: str, lease_until: int, /
    ) -> str | None:
        """Claim ``claimed`` for ``request``, exactly once (``requeststate.KeepingGuard.redeem``): one
        script, which on the first claim also writes its record (the request's digest and
        ``lease_until``), and on a retry reads that record back.

        Returns:
            ``None`` on the first claim; the answer kept for it, on an identical retry.

        Raises:
            InvalidToken: ``replayed``, ``in_progress``, ``outcome_unknown``, ``outside_memory``.
            GuardUnavailable: as ``claim``.
            ValueError: as ``claim``; a lease that ends before ``now``; a cluster namespace with a
                ``}`` (which keeps no records).
        """
        claim, keys, args = self._prepare_redeem(claimed, expires_at, now, request, lease_until)
        return self._ledger.settle_redeem(claim, self._run(keys, args, now))

    def keep(self, claimed: ClaimId, request: str, answer: str, /) -> None:
        """Keep ``answer`` (a sealed token) in the record of ``claimed``'s first call for ``request``,
        if that record is there, holds ``request`` and no answer yet (``requeststate.KeepingGuard.keep``).

        Raises:
            GuardUnavailable: Redis did not answer: the answer may not be kept.
            ValueError: an answer that is no sealed token; a cluster namespace with a ``}``.
        """
        keys, args = self._prepare_keep(claimed, request, answer)
        try:
            self._keep_script(keys=keys, args=args)
        except ERRORS as error:
            raise unanswered(error, "the answer") from error

    def _run(self, keys: list[str], args: tuple[int | str, ...], now: int) -> Answer:
        """Run a claim's script; mark every bucket where its answer says their memory may be new."""
        try:
            answer = self._read(self._script(keys=keys, args=args))
        except ERRORS as error:
            raise unanswered(error, "the claim") from error
        if self._marks_every_bucket(answer):
            try:
                self._mark(now)
            except ERRORS as error:
                log.debug("Redis Cluster buckets not all marked (%s)", type(error).__name__)
        return answer

    def begin(self, now: int | None = None) -> int:
        """Record in Redis that its memory of the claims begins now, where it has no record: call at start.

        A token is accepted only if it was minted more than ``clock_skew`` seconds
        after Redis's memory of the claims began; a claim that finds no record writes
        one, and refuses its own token. Call ``begin`` when the server starts, before
        it mints: on a new Redis (a first deploy), every token minted from the second
        it returns is accepted at its first claim. Where Redis has a record of its
        own, nothing changes. ``now``: unix seconds; the clock when ``None``.

        Returns:
            The first unix second whose tokens are accepted: about ``now + clock_skew + 1``
            on a Redis with no record, earlier where the memory began before.

        Raises:
            GuardUnavailable: Redis did not answer, or the namespace's verifiers use
                another ``clock_skew`` or leeway (the message names both).
        """
        try:
            first = self._first_accepted(self._mark(int(time.time()) if now is None else now))
        except ERRORS as error:
            raise unanswered(error, "when its memory began") from error
        self._look_for_0_3()
        return first

    def close(self) -> None:
        """Close the client and its connections."""
        self._client.close()

    def _look_for_0_3(self) -> None:
        """Look, once at start, for requeststate 0.3's claims in the namespace (a courtesy, not a check)."""
        command = self._scan_for_0_3()
        client = self._client
        try:
            if isinstance(client, redis.cluster.RedisCluster):
                masters = client.get_primaries()  # type: ignore[no-untyped-call]  # untyped in redis-py
                replies = [
                    client.execute_command(*command, target_nodes=node)  # type: ignore[no-untyped-call]
                    for node in masters
                ]
            else:
                replies = [client.execute_command(*command)]  # type: ignore[no-untyped-call]
        except ERRORS as error:  # an ACL without SCAN, say: the look is a courtesy, not a check
            log.debug("Redis not searched for requeststate 0.3's claims (%s)", type(error).__name__)
            return
        self._tell_if_0_3(replies)

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
    def _connect(cls, address: str, *, cluster: bool, timeout: float, options: dict[str, Any]) -> Client:
        if cluster:  # a pool per node, refusing (not waiting for) a connection past the most
            return redis.cluster.RedisCluster.from_url(
                address, retry=Retry(NoBackoff(), 0), max_connections=MAX_CONNECTIONS, **options
            )
        pool = redis.BlockingConnectionPool.from_url(
            address, max_connections=MAX_CONNECTIONS, timeout=timeout, retry=Retry(NoBackoff(), 0), **options
        )
        return redis.Redis.from_pool(pool)

    def _mark(self, now: int) -> list[object]:
        """Write each bucket's marker that is missing or names another memory; the script's replies."""
        client, args = self._client, self._marker_args(now)
        if not isinstance(client, redis.cluster.RedisCluster):
            return [self._script(keys=[self.bucket_keys[0]], args=args)]
        sha = client.script_load(CLAIM_SCRIPT)  # to every master
        # One batch per master, on its own connection: the cluster client's pipeline() warns on
        # redis-py 6.0 (its own deprecated argument).
        by_master: dict[str, tuple[Any, list[str]]] = {}
        for key in self.bucket_keys:
            node = client.get_node_from_key(key)  # type: ignore[no-untyped-call]  # untyped in redis-py
            by_master.setdefault(node.name, (node, []))[1].append(key)
        replies: list[object] = []
        for node, keys in by_master.values():
            with client.get_redis_connection(node).pipeline(transaction=False) as batch:
                for key in keys:
                    batch.evalsha(sha, 1, key, *args)
                replies += batch.execute(raise_on_error=False)
        return replies
