"""A ``MemoryGuard`` for tests that mint and redeem at once: its memory began at the epoch."""

from __future__ import annotations

from typing import Any

import requeststate as rs


def memory_guard(**options: Any) -> rs.MemoryGuard:
    """A ``MemoryGuard`` that refuses no token for predating it (its clock read 0), purging by ``now``.

    A guard accepts the tokens its own codecs mint from its first second, but refuses
    any other minted by then (tests/test_memory.py shows both); a test that claims ids
    of its own making, whatever their dates, uses this one.
    """
    options.setdefault("clock_skew", 0)
    return rs.MemoryGuard(clock=lambda: 0, **options)
