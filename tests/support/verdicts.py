"""A redemption's outcome as one value, for tests that compare many of them at once."""

from __future__ import annotations

import requeststate as rs

__all__ = ["verdict"]


def verdict(codec: rs.Codec, token: str, now: int) -> str:
    """``accepted``, or the reason ``codec`` refuses ``token`` at ``now``."""
    try:
        codec.verify(token, now=now)
    except rs.InvalidToken as refused:
        return refused.reason.value
    return "accepted"
