"""Error replies provoked on a real redis-server, each undone on exit: what a guard must refuse to ride out.

``replying(server, fault)`` reconfigures a running server (support/redis_server.py) so that a
claim gets the error reply ``fault``, and yields the URL a guard should connect to. ``-LOADING``
comes from a server of its own (``redis_server.loading_redis``): no running server can be made
to load again without a restart.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from .redis_server import Server, free_loopback_port

__all__ = ["FAULTS", "replying"]

FAULTS: Final = ("OOM", "READONLY", "MASTERDOWN", "NOPERM", "WRONGPASS")
"""The error replies ``replying`` provokes (redis-py raises each as its own class)."""


@contextmanager
def replying(server: Server, fault: str) -> Iterator[str]:
    """Make ``server`` answer a claim with the error reply ``fault``; yield the URL to claim through."""
    if fault == "OOM":
        # Under maxmemory, with the default policy (noeviction), every write answers -OOM.
        server.execute("CONFIG", "SET", "maxmemory", 1)
        try:
            yield server.url
        finally:
            server.execute("CONFIG", "SET", "maxmemory", 0)
    elif fault in {"READONLY", "MASTERDOWN"}:
        # A replica of a master that never answers: it refuses writes (-READONLY), or every
        # command but a few while it is told not to serve stale data (-MASTERDOWN).
        stale = "no" if fault == "MASTERDOWN" else "yes"
        server.execute("CONFIG", "SET", "replica-serve-stale-data", stale)
        server.execute("REPLICAOF", "127.0.0.1", free_loopback_port())
        try:
            yield server.url
        finally:
            server.execute("REPLICAOF", "NO", "ONE")
            server.execute("CONFIG", "SET", "replica-serve-stale-data", "yes")
    elif fault in {"NOPERM", "WRONGPASS"}:
        # A user who may read but not write (-NOPERM), or a password the server refuses (-WRONGPASS).
        user, password = f"guard-{uuid.uuid4().hex}", uuid.uuid4().hex
        server.execute("ACL", "SETUSER", user, "on", f">{password}", "~*", "+@connection", "+get")
        given = password if fault == "NOPERM" else uuid.uuid4().hex
        try:
            yield server.url.replace("redis://", f"redis://{user}:{given}@")
        finally:
            server.execute("ACL", "DELUSER", user)
    else:
        raise ValueError(f"no such fault: {fault!r}; the faults are {', '.join(FAULTS)}")
