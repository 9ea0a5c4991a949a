"""What every store's guard shares beside its I/O: the options it reads back and the leeway it learns.

A store's guard (SQLite, Redis, PostgreSQL) subclasses ``StoredGuard`` and sets ``_ledger`` (the
shared rules, on its namespace and ``clock_skew``) and ``_timeout``; the rest is its own.
"""

from __future__ import annotations

from ._ledger import Ledger

__all__ = ["StoredGuard"]


class StoredGuard:
    """The properties every store's guard answers, and the leeway its codecs tell it."""

    __slots__ = ()

    _ledger: Ledger
    _timeout: float | None

    @property
    def namespace(self) -> str:
        """The namespace of this guard's claims in its store: one per application sharing it."""
        return self._ledger.namespace

    @property
    def clock_skew(self) -> int:
        """Seconds that any two hosts' clocks may differ by, as the namespace's verifiers all use."""
        return self._ledger.clock_skew

    @property
    def timeout(self) -> float | None:
        """Seconds a claim waits for the store; ``None`` for a client given to a Redis guard (its own)."""
        return self._timeout

    def learn_leeway(self, leeway: int) -> None:
        """Called by each ``Codec`` built with this guard, with its ``leeway``.

        Raises:
            ValueError: another codec told this guard another leeway, or the store already
                holds the terms with another (the guard began, or claimed, before the codec
                was built).
        """
        self._ledger.learn_leeway(leeway)
