"""A ``MemoryGuard`` for tests that mint and redeem at once: its memory began at the epoch."""

from __future__ import annotations

from typing import Any

import requeststate as rs


def memory_guard(**options: Any) -> rs.MemoryGuard:
    """A ``MemoryGuard`` that refuses no token a test mints for predating it (its clock read 0).

    A guard built now refuses every token minted by the second it was built
    (tests/test_memory.py shows it); a test that mints in that same second uses this one.
    """
    return rs.MemoryGuard(clock=lambda: 0, **options)
