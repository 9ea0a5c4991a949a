"""A replay guard in one SQLite file, for servers running as several processes on one host.

Python's own ``sqlite3``, no extra to install:

```python
from requeststate.sqlite import SQLiteGuard

guard = SQLiteGuard("/var/lib/myserver/claims.db")  # absolute: workers may not share a cwd
guard.begin()  # at start, before minting (requeststate.mcp.protect does it)
state = rs.decode(token, keys, mode="encrypted", subject=user, guard=guard)
```

Or, configured by the deployment alone: ``REQUESTSTATE_GUARD=sqlite:////var/lib/myserver/claims.db``.
The rules that make single use hold are the Redis guard's, in one place
(``requeststate``'s ledger); docs/replay-guards.md says what each guard covers.
"""

from __future__ import annotations

from ._guards import (
    DEFAULT_CLOCK_SKEW,
    DEFAULT_NAMESPACE,
    DEFAULT_TIMEOUT,
    SCHEMES,
    AsyncSQLiteGuard,
    SQLiteGuard,
)

__all__ = [
    "DEFAULT_CLOCK_SKEW",
    "DEFAULT_NAMESPACE",
    "DEFAULT_TIMEOUT",
    "SCHEMES",
    "AsyncSQLiteGuard",
    "SQLiteGuard",
]
