"""The thin adapter: ``decode`` is ``verify`` with every refusal turned into ``None``.

Both are adapters over one strict check (``_codec._verified`` and its guard
claim), which returns the reason for a refusal instead of raising it: ``verify``
raises ``InvalidToken(reason)``, ``decode`` returns ``None``, and a refused
token costs ``decode`` no exception at all.
"""

from __future__ import annotations

from typing import Any, TypeVar, overload

from ._codec import DEFAULT_MAX_TOKEN_BYTES, Keys, Modes, _verified, achecked, checked
from ._guard import AsyncGuard, Guard

__all__ = ["adecode", "decode"]

T = TypeVar("T")


@overload
def decode(
    token: object,
    keys: Keys,
    /,
    *,
    mode: Modes,
    subject: str = "",
    tool: str | None = None,
    leeway: int = 0,
    now: int | None = None,
    type: None = None,
    max_token_bytes: int = DEFAULT_MAX_TOKEN_BYTES,
    guard: Guard | None = None,
) -> str | None: ...
@overload
def decode(
    token: object,
    keys: Keys,
    /,
    *,
    mode: Modes,
    subject: str = "",
    tool: str | None = None,
    leeway: int = 0,
    now: int | None = None,
    type: type[T],
    max_token_bytes: int = DEFAULT_MAX_TOKEN_BYTES,
    guard: Guard | None = None,
) -> T | None: ...
def decode(
    token: object,
    keys: Keys,
    /,
    *,
    mode: Modes,
    subject: str = "",
    tool: str | None = None,
    leeway: int = 0,
    now: int | None = None,
    type: Any = None,
    max_token_bytes: int = DEFAULT_MAX_TOKEN_BYTES,
    guard: Guard | None = None,
) -> Any:
    """Return the state a token carries, or ``None`` if it is refused for any reason.

    Takes the same arguments as ``verify``. Whatever the client sent as the
    token (any value of any type), this never raises for it; only a bad
    configuration argument (keys, mode, leeway, type, guard) raises. Use
    ``verify`` where the log should say why a token was refused.
    """
    verified = _verified(token, keys, mode, subject, tool, leeway, now, type, max_token_bytes)
    if guard is None:  # nothing to claim: skip a call on the path every request takes
        return verified[0] if isinstance(verified, tuple) else None
    return checked(verified, guard, leeway)[0]


@overload
async def adecode(
    token: object,
    keys: Keys,
    /,
    *,
    mode: Modes,
    subject: str = "",
    tool: str | None = None,
    leeway: int = 0,
    now: int | None = None,
    type: None = None,
    max_token_bytes: int = DEFAULT_MAX_TOKEN_BYTES,
    guard: AsyncGuard | Guard | None = None,
) -> str | None: ...
@overload
async def adecode(
    token: object,
    keys: Keys,
    /,
    *,
    mode: Modes,
    subject: str = "",
    tool: str | None = None,
    leeway: int = 0,
    now: int | None = None,
    type: type[T],
    max_token_bytes: int = DEFAULT_MAX_TOKEN_BYTES,
    guard: AsyncGuard | Guard | None = None,
) -> T | None: ...
async def adecode(
    token: object,
    keys: Keys,
    /,
    *,
    mode: Modes,
    subject: str = "",
    tool: str | None = None,
    leeway: int = 0,
    now: int | None = None,
    type: Any = None,
    max_token_bytes: int = DEFAULT_MAX_TOKEN_BYTES,
    guard: AsyncGuard | Guard | None = None,
) -> Any:
    """``decode`` for asyncio servers: awaits an async guard; ``None`` for every refusal."""
    verified = _verified(token, keys, mode, subject, tool, leeway, now, type, max_token_bytes)
    return (await achecked(verified, guard, leeway))[0]
