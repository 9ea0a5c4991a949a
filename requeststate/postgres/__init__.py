"""Replay guards in PostgreSQL, for a fleet of servers on several hosts that already runs it.

Install with `pip install 'requeststate[postgres]'` (psycopg 3 and psycopg_pool; psycopg's
pure build, on the host's libpq: docs/postgres-guard.md says why):

```python
from requeststate.postgres import PostgresGuard

guard = PostgresGuard.from_url("postgresql://guard@db.internal/app?namespace=myapp")
guard.begin()  # at start, before minting (requeststate.mcp.protect does it)
state = rs.decode(token, keys, mode="encrypted", subject=user, guard=guard)
```

Or, configured by the deployment alone:
``REQUESTSTATE_GUARD=postgresql://guard@db.internal/app?namespace=myapp``. Each claim is
one call of a PL/pgSQL function, atomic in its own transaction; the guard creates its
tables and the function where they are missing. The rules that make single use hold are
the Redis guard's, in one place (``requeststate``'s ledger): the marker names the memory by
the cluster's system identifier, the timeline being written and the database's oid, so a
new cluster, a promoted standby, a point-in-time recovery or a recreated database is a
loss, and every token minted before it is refused. docs/postgres-guard.md says what each
failure does.
"""

from __future__ import annotations

try:  # the extra's presence, checked before the guards import it
    import psycopg  # noqa: F401
    import psycopg_pool  # noqa: F401
except ImportError as missing:  # the extra is not installed, or the host has no libpq
    raise ImportError(
        "requeststate.postgres needs the postgres extra (pip install 'requeststate[postgres]') and "
        "libpq on the host (Debian: apt-get install libpq5), or psycopg's own: pip install 'psycopg[binary]'",
        name=missing.name,
    ) from missing

from ._guards import (
    DEFAULT_NAMESPACE,
    DEFAULT_TIMEOUT,
    MAX_CONNECTIONS,
    SCHEMES,
    AsyncPostgresGuard,
    PostgresGuard,
)

__all__ = [
    "DEFAULT_NAMESPACE",
    "DEFAULT_TIMEOUT",
    "MAX_CONNECTIONS",
    "SCHEMES",
    "AsyncPostgresGuard",
    "PostgresGuard",
]
