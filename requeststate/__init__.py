"""Integrity-protected, optionally encrypted MCP ``requestState`` tokens.

Mint with ``encode`` when a handler answers input-required; read the echo
with ``decode`` (``None`` on any refusal) or ``verify`` (raises
``InvalidToken`` with a log-only reason)::

    keys = KeyRing(secret)
    token = encode(state, keys, mode="encrypted", subject=user, tool="book")
    state = decode(token, keys, mode="encrypted", subject=user, tool="book")

Pass ``guard=MemoryGuard()`` (one process) or ``requeststate.redis.RedisGuard``
(several) to ``decode`` to make tokens single-use. ``requeststate.mcp`` protects
an MCP SDK server in one line.
"""

from __future__ import annotations

from ._adapter import adecode, decode
from ._codec import DEFAULT_MAX_TOKEN_BYTES, DEFAULT_TTL, Mode, averify, encode, verify
from ._errors import InvalidToken, KeyBudgetExhausted, Reason
from ._guard import AsyncGuard, Guard, GuardUnavailable, MemoryGuard
from ._keys import KeyRing

__all__ = [
    "DEFAULT_MAX_TOKEN_BYTES",
    "DEFAULT_TTL",
    "AsyncGuard",
    "Guard",
    "GuardUnavailable",
    "InvalidToken",
    "KeyBudgetExhausted",
    "KeyRing",
    "MemoryGuard",
    "Mode",
    "Reason",
    "adecode",
    "averify",
    "decode",
    "encode",
    "verify",
]

__version__ = "0.1.0"
