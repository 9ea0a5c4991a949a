"""What ``RedisGuard`` and ``AsyncRedisGuard`` share: all but their I/O, sync in one, awaited in the other."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Final, Generic, Self, TypeVar, Unpack

from ._ledger import Ledger
from ._settings import DEFAULT_CLOCK_SKEW, DEFAULT_TIMEOUT, GuardOptions, check_settings, client_options

__all__ = ["GuardBase"]

ClientT = TypeVar("ClientT")
"""The client a guard claims through: ``Client`` (``RedisGuard``) or ``AsyncClient`` (``AsyncRedisGuard``)."""


class GuardBase(ABC, Generic[ClientT]):
    """A replay guard on a Redis client but for its I/O: the client, the options and the ledger of claims."""

    __slots__ = ("_client", "_ledger")

    def __init__(self, client: ClientT, **options: Unpack[GuardOptions]) -> None:
        cluster = self._check_client(client)
        self._ledger: Final = Ledger(check_settings(options, cluster=cluster))
        self._client: Final = client

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        cluster: bool = False,
        timeout: float = DEFAULT_TIMEOUT,
        **options: Unpack[GuardOptions],
    ) -> Self:
        """A guard on a new client for ``url``, waiting at most ``timeout`` seconds to connect or answer.

        ``cluster=True`` builds a Redis Cluster client from the URL of any node of
        the cluster: the sync client connects at once, to read the slot map; the
        asyncio client reads it at its first claim. With ``replicas``, the read
        timeout is ``timeout + replica_timeout``, so that ``WAIT``'s answer arrives
        before it. The client does not retry: a retried claim whose first answer was
        lost would read the guard's own claim as a replay. The other options are
        ``GuardOptions``.
        """
        # The options are checked before a client exists (a sync cluster client connects at once,
        # and one built for a refused guard would be left open), and the guard checks them again,
        # as it does whoever built its client.
        settings = check_settings(options, cluster=cluster)
        client = cls._connect(url, cluster=cluster, timeouts=client_options(timeout, settings))
        return cls(client, **options)

    @property
    def client(self) -> ClientT:
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

    def __repr__(self) -> str:
        """The guard's class and the options that differ from a plain guard's, never a password."""
        settings = self._ledger.settings
        shown = [f"namespace={settings.namespace!r}", f"fail_open={settings.fail_open}"]
        if settings.replicas:
            shown.append(f"replicas={settings.replicas}")
        if settings.max_token_lifetime is not None:
            shown.append(f"max_token_lifetime={settings.max_token_lifetime}")
        if settings.clock_skew != DEFAULT_CLOCK_SKEW:
            shown.append(f"clock_skew={settings.clock_skew}")
        if settings.allow_eviction:
            shown.append("allow_eviction=True")
        return f"{type(self).__name__}({', '.join(shown)})"

    @staticmethod
    @abstractmethod
    def _check_client(client: object) -> bool:
        """Whether ``client`` is a cluster client; ``TypeError`` if it is no client this guard takes."""

    @classmethod
    @abstractmethod
    def _connect(cls, url: str, *, cluster: bool, timeouts: dict[str, Any]) -> ClientT:
        """A new client for ``url`` (a cluster client if ``cluster``), with ``timeouts`` and no retries."""
