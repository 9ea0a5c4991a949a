"""What ``RedisGuard`` and ``AsyncRedisGuard`` share: all but their I/O, sync in one, awaited in the other."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Final, Generic, Self, TypeAlias, TypeVar

from requeststate import ClaimId
from requeststate._seam import Answer, Claim, Ledger, StoredGuard

from ._buckets import bucket_key, bucket_of, record_key
from ._script import CLAIM_SCRIPT, KEEP_SCRIPT, arguments, log, read
from ._settings import (
    DEFAULT_CLOCK_SKEW,
    DEFAULT_NAMESPACE,
    DEFAULT_TIMEOUT,
    buckets_for,
    client_options,
    read_url,
)

__all__ = ["GuardBase"]

SCANNED_FOR_0_3: Final = 10_000
"""How many keys ``begin`` looks at (on each master) for requeststate 0.3's claims: a sample, not a proof."""
_Prepared: TypeAlias = "tuple[Claim, list[str], tuple[int | str, ...]]"
"""A claim, the script's keys (its set; and its record, for an exactly-once claim), and its arguments."""
ClientT = TypeVar("ClientT")
"""The client a guard claims through: ``Client`` (``RedisGuard``) or ``AsyncClient`` (``AsyncRedisGuard``)."""


class GuardBase(StoredGuard, ABC, Generic[ClientT]):
    """A replay guard on a Redis client but for its I/O: the client, its settings, and the shared rules."""

    __slots__ = (
        "_buckets",
        "_client",
        "_db",
        "_keep_script",
        "_keeps_records",
        "_ledger",
        "_script",
        "_timeout",
        "bucket_keys",
    )

    def __init__(
        self, client: ClientT, *, namespace: str = DEFAULT_NAMESPACE, clock_skew: int = DEFAULT_CLOCK_SKEW
    ) -> None:
        """Guard with ``client``; ``namespace``: one per application sharing a Redis (no ``{`` on a
        cluster); ``clock_skew``: seconds that any two hosts' clocks (and Redis's) may differ by, the
        same for every verifier of a namespace (default ``DEFAULT_CLOCK_SKEW``).

        Raises:
            TypeError, ValueError: a client of another kind, or a bad option (all are checked here).
        """
        self._setup(client, _ledger(namespace, clock_skew, cluster=self._check_client(client)), timeout=None)

    def _setup(self, client: ClientT, ledger: Ledger, *, timeout: float | None) -> None:
        cluster = self._check_client(client)
        self.bucket_keys = _bucket_keys(ledger.namespace, cluster)
        self._buckets = len(self.bucket_keys)
        # On a cluster, a '}' in the namespace cuts short the hash tag that puts a claim's record in
        # its set's slot: such a guard claims as 0.4 did, and keeps no answers.
        self._keeps_records = not (cluster and "}" in ledger.namespace)
        self._ledger = ledger
        # The database the marker names: a SWAPDB moves a set to another one. A cluster has db 0 only.
        self._db = 0 if cluster else int(client.connection_pool.connection_kwargs.get("db", 0))  # type: ignore[attr-defined]
        self._client = client
        self._timeout = timeout
        # EVALSHA, and the script itself only when Redis does not have it yet (NOSCRIPT: not run).
        self._script = client.register_script(CLAIM_SCRIPT)  # type: ignore[attr-defined]
        self._keep_script = client.register_script(KEEP_SCRIPT)  # type: ignore[attr-defined]

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        namespace: str | None = None,
        timeout: float | None = None,
        clock_skew: int | None = None,
    ) -> Self:
        """A guard on a new client for ``url``: ``redis://host:port/db``, ``rediss://`` (TLS), or
        ``redis+cluster://host:port`` (``rediss+cluster``) for a Redis Cluster, from any of its nodes.

        The options (``namespace``, ``clock_skew``, and ``timeout``: how long the client waits
        to connect, for an answer, or for one of its at most ``MAX_CONNECTIONS`` connections;
        default ``DEFAULT_TIMEOUT``) go in the URL's query (``?timeout=0.5``) or by keyword, each
        once. The sync cluster client connects at once, to read the slot map; the asyncio
        client reads it at its first claim. The client does not retry: a retried claim whose
        first answer was lost would read the guard's own claim as a replay.

        Raises:
            TypeError, ValueError: a URL of another form or a bad option, naming no part of the URL.
        """
        given = {"namespace": namespace, "timeout": timeout, "clock_skew": clock_skew}
        read = read_url(url, given)
        settings = dict(read.options)
        timeout = float(settings.pop("timeout", DEFAULT_TIMEOUT))  # type: ignore[arg-type]
        # Checked before a client exists: a sync cluster client connects at once, and one built
        # for a refused guard would be left open.
        ledger = _ledger(
            settings.get("namespace", DEFAULT_NAMESPACE),
            settings.get("clock_skew", DEFAULT_CLOCK_SKEW),
            cluster=read.cluster,
        )
        client = cls._connect(
            read.address, cluster=read.cluster, timeout=timeout, options=client_options(timeout)
        )
        guard = cls.__new__(cls)
        guard._setup(client, ledger, timeout=timeout)
        return guard

    @property
    def client(self) -> ClientT:
        """The client this guard claims through."""
        return self._client

    def __repr__(self) -> str:
        """The guard's class and the options that differ from a plain guard's, never a password."""
        shown = [f"namespace={self._ledger.namespace!r}"]
        if self._ledger.clock_skew != DEFAULT_CLOCK_SKEW:
            shown.append(f"clock_skew={self._ledger.clock_skew}")
        return f"{type(self).__name__}({', '.join(shown)})"

    def _prepare(self, claimed: ClaimId, expires_at: int, now: int) -> _Prepared | None:
        """The claim of ``claimed``, the script's keys and arguments; ``None`` for a replay of a claim
        Redis already answered to this guard (refused without a round trip)."""
        claim = self._ledger.prepare(claimed, expires_at, now)
        if self._ledger.answered_before(claim):
            return None
        return claim, [self._bucket(claim.member)], self._args(claim)

    def _prepare_redeem(
        self, claimed: ClaimId, expires_at: int, now: int, request: str, lease_until: int
    ) -> _Prepared:
        """The exactly-once claim of ``claimed`` for ``request``, the script's keys and arguments (a
        retry always asks Redis: it reads the first call's record); ``ValueError`` where the
        namespace keeps no records."""
        claim = self._ledger.prepare_redeem(claimed, expires_at, now, request, lease_until)
        return claim, [self._bucket(claim.member), self._record(claim.member)], self._args(claim)

    def _prepare_keep(self, claimed: ClaimId, request: str, answer: str) -> tuple[list[str], tuple[str, str]]:
        """``KEEP_SCRIPT``'s keys (the claim's record) and arguments, to keep ``answer`` in the record of
        ``claimed``'s claim; ``ValueError`` where the namespace keeps no records."""
        member, digest, kept = self._ledger.prepare_keep(claimed, request, answer)
        return [self._record(member)], (digest, kept)

    def _bucket(self, member: str) -> str:
        """The set that holds the claim whose member is ``member``."""
        return self.bucket_keys[bucket_of(member, self._buckets)]

    def _record(self, member: str) -> str:
        """The key of the record of the exactly-once claim whose member is ``member``."""
        if not self._keeps_records:
            raise ValueError(
                f"namespace {self._ledger.namespace!r} cannot keep answers on a Redis Cluster: a '}}' in it "
                "cuts short the hash tag that puts a claim's record in its set's slot; give the exactly-once "
                "verifiers a namespace without braces"
            )
        return record_key(self._ledger.namespace, self._bucket(member), member)

    def _marker_args(self, now: int) -> tuple[int | str, ...]:
        """The script's arguments that only write a marker, where one is missing or another memory's."""
        return self._args(self._ledger.mark(now))

    def _args(self, claim: Claim) -> tuple[int | str, ...]:
        return arguments(claim, self._db, self._ledger.clock_skew)

    def _read(self, reply: object) -> Answer:
        return read(self._ledger, reply)

    def _marks_every_bucket(self, answer: Answer) -> bool:
        """Whether to mark every bucket now, after a claim's ``answer``.

        One bucket's memory began here, so the others' may have too (a master that
        restarted, a new cluster): marked now, each accepts the tokens minted from now
        on. A bucket left unmarked is marked by its next claim all the same.
        """
        return answer.began_here and self._buckets > 1

    def _scan_for_0_3(self) -> tuple[str | int, ...]:
        """The ``SCAN`` (on every master, in a cluster) that looks for requeststate 0.3's claims."""
        pattern = f"{self._ledger.namespace}:" + "[0-9a-f]" * 64  # 0.3's <namespace>:<sha256 hex>
        return ("SCAN", 0, "MATCH", pattern, "COUNT", SCANNED_FOR_0_3)

    def _tell_if_0_3(self, replies: list[Any]) -> None:
        """Log if a ``SCAN`` found 0.3's claims in this namespace: a mixed fleet is not single use."""
        if any(isinstance(reply, list | tuple) and len(reply) == 2 and reply[1] for reply in replies):
            log.warning(
                "Redis holds claims of requeststate 0.3 in namespace %r (keys %s:<sha256>): a 0.3 verifier "
                "does not see this release's claims, nor this one its: while both run, a token can be "
                "redeemed once on each. Stop every 0.3 verifier, or give this release a namespace of its own",
                self._ledger.namespace,
                self._ledger.namespace,
            )

    def _first_accepted(self, replies: list[object]) -> int:
        """``begin``'s result from the markers' replies (an error in one's place raises it)."""
        answers = []
        for reply in replies:
            if isinstance(reply, Exception):
                raise reply
            answers.append(self._read(reply))
        return self._ledger.first_accepted(answers)

    @staticmethod
    @abstractmethod
    def _check_client(client: object) -> bool:
        """Whether ``client`` is a cluster client; ``TypeError`` if it is no client this guard takes."""

    @classmethod
    @abstractmethod
    def _connect(cls, address: str, *, cluster: bool, timeout: float, options: dict[str, Any]) -> ClientT:
        """A new client for ``address`` (a cluster client if ``cluster``): at most ``MAX_CONNECTIONS``
        connections, each waited for up to ``timeout``, with ``options`` and no retries."""


def _ledger(namespace: object, clock_skew: object, *, cluster: bool) -> Ledger:
    """The shared rules, on the guard's namespace and ``clock_skew`` (which they check)."""
    buckets_for(namespace, cluster=cluster)
    return Ledger(namespace, clock_skew, log="requeststate.redis", describe="Redis")  # type: ignore[arg-type]


def _bucket_keys(namespace: str, cluster: bool) -> tuple[str, ...]:
    buckets = buckets_for(namespace, cluster=cluster)
    return tuple(bucket_key(namespace, bucket, buckets) for bucket in range(buckets))
