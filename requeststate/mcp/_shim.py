"""A stand-in for ``rs.Codec`` until it lands on main: the same surface, over the module functions."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import requeststate as rs
from requeststate._codec import Keys, Modes, check_options


class Codec:
    """``rs.Codec``'s surface: options checked once, then encode/verify/averify."""

    def __init__(
        self,
        keys: Keys,
        /,
        *,
        mode: Modes,
        ttl: int = rs.DEFAULT_TTL,
        leeway: int = 0,
        max_token_bytes: int = rs.DEFAULT_MAX_TOKEN_BYTES,
        guard: rs.Guard | rs.AsyncGuard | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.keys, self.modes = check_options(
            keys, mode=mode, ttl=ttl, leeway=leeway, max_token_bytes=max_token_bytes
        )
        if guard is not None and (inspect.isclass(guard) or not callable(getattr(guard, "claim", None))):
            raise TypeError(f"guard must be a Guard or AsyncGuard instance, not {guard!r}")
        if clock is not None and not callable(clock):
            raise TypeError("clock must be a callable returning unix seconds")
        self.ttl, self.leeway, self.max_token_bytes = ttl, leeway, max_token_bytes
        self.guard, self._clock = guard, clock

    def _now(self, now: int | None) -> int | None:
        return now if now is not None or self._clock is None else int(self._clock())

    def encode(
        self, state: object, /, *, subject: str = "", tool: str | None = None, now: int | None = None
    ) -> str:
        return rs.encode(
            state,
            self.keys,
            mode=self.modes[0],
            subject=subject,
            tool=tool,
            ttl=self.ttl,
            now=self._now(now),
            max_token_bytes=self.max_token_bytes,
        )

    def verify(
        self, token: object, /, *, subject: str = "", tool: str | None = None, now: int | None = None
    ) -> Any:
        guard: Any = self.guard
        return rs.verify(
            token,
            self.keys,
            mode=self.modes,
            subject=subject,
            tool=tool,
            leeway=self.leeway,
            now=self._now(now),
            max_token_bytes=self.max_token_bytes,
            guard=guard,
        )

    async def averify(
        self, token: object, /, *, subject: str = "", tool: str | None = None, now: int | None = None
    ) -> Any:
        return await rs.averify(
            token,
            self.keys,
            mode=self.modes,
            subject=subject,
            tool=tool,
            leeway=self.leeway,
            now=self._now(now),
            max_token_bytes=self.max_token_bytes,
            guard=self.guard,
        )
