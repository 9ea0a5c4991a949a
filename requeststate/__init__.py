"""Integrity-protected, optionally encrypted MCP ``requestState`` tokens.

Build a ``Codec`` once, with the options your deployment chooses; mint with
``encode`` when a handler answers input-required, and read the echo with
``decode`` (``None`` on any refusal) or ``verify`` (raises ``InvalidToken``
with a log-only reason):

```python
codec = Codec.from_env()          # REQUESTSTATE_KEYS, _MODE, _TTL, and _GUARD (a replay guard's URL)
token = codec.encode(state, subject=user, tool="book")
state = codec.decode(token, subject=user, tool="book")
```

The module functions ``encode``/``decode``/``verify`` take the same options on
every call, over a cached ``Codec``; ``Codec.averify``/``adecode`` serve asyncio.
Pass ``guard=MemoryGuard()`` (one process), ``requeststate.sqlite.SQLiteGuard``
(the workers of one host) or ``requeststate.redis.RedisGuard`` (across hosts) to
make tokens single-use; ``Codec.redeem`` and ``Codec.keep`` make a destructive action run once per
token, every identical retry getting its first answer. ``requeststate.mcp`` protects an MCP SDK
server in one line.
"""

from __future__ import annotations

from ._claims import Claims
from ._codec import CallOptions, Codec, decode, encode, verify
from ._env import ENV_GUARD, ENV_KEYS, ENV_MODE, ENV_TTL
from ._errors import InvalidToken, KeyBudgetExhausted, Reason
from ._guard import AsyncGuard, AsyncKeepingGuard, Guard, GuardUnavailable, KeepingGuard
from ._guard_url import guard_from_url
from ._keys import KeyRing, Keys
from ._ledger import DEFAULT_CLOCK_SKEW
from ._memory import MemoryGuard
from ._modes import Mode, ModeName, Modes, ModeSpec
from ._options import (
    DEFAULT_LEASE,
    DEFAULT_LEEWAY,
    DEFAULT_MAX_TOKEN_BYTES,
    DEFAULT_MODE,
    DEFAULT_TTL,
    MAX_TTL,
    CodecOptions,
    Context,
)
from ._payload import MAX_JSON_DEPTH
from ._peek import Peek, peek
from ._redemption import Redemption
from ._secrets import MIN_SECRET_BYTES, SecretEncoding
from ._token_id import ClaimId
from ._version import __version__

__all__ = [
    "DEFAULT_CLOCK_SKEW",
    "DEFAULT_LEASE",
    "DEFAULT_LEEWAY",
    "DEFAULT_MAX_TOKEN_BYTES",
    "DEFAULT_MODE",
    "DEFAULT_TTL",
    "ENV_GUARD",
    "ENV_KEYS",
    "ENV_MODE",
    "ENV_TTL",
    "MAX_JSON_DEPTH",
    "MAX_TTL",
    "MIN_SECRET_BYTES",
    "AsyncGuard",
    "AsyncKeepingGuard",
    "CallOptions",
    "ClaimId",
    "Claims",
    "Codec",
    "CodecOptions",
    "Context",
    "Guard",
    "GuardUnavailable",
    "InvalidToken",
    "KeepingGuard",
    "KeyBudgetExhausted",
    "KeyRing",
    "Keys",
    "MemoryGuard",
    "Mode",
    "ModeName",
    "ModeSpec",
    "Modes",
    "Peek",
    "Reason",
    "Redemption",
    "SecretEncoding",
    "__version__",
    "decode",
    "encode",
    "guard_from_url",
    "peek",
    "verify",
]
