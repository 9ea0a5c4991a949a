"""A client ``Transport`` that records every JSON-RPC frame crossing it, both directions."""

from __future__ import annotations

import base64
import binascii
import json
import re
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import Any, Self

from mcp.client._transport import TransportStreams
from mcp.shared.message import SessionMessage


def _record(log: list[str], item: object) -> None:
    if isinstance(item, SessionMessage):
        log.append(item.message.model_dump_json(by_alias=True, exclude_none=True))


class _Tap:
    """Delegates to one stream of a transport; the subclasses record what crosses it."""

    def __init__(self, inner: Any, log: list[str]) -> None:
        self._inner, self._log = inner, log

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        await self._inner.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        result: bool | None = await self._inner.__aexit__(exc_type, exc, tb)
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _ReadTap(_Tap):
    async def receive(self) -> SessionMessage | Exception:
        item: SessionMessage | Exception = await self._inner.receive()
        _record(self._log, item)
        return item

    def __aiter__(self) -> _ReadTap:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        item: SessionMessage | Exception = await self._inner.__anext__()
        _record(self._log, item)
        return item


class _WriteTap(_Tap):
    async def send(self, item: SessionMessage, /) -> None:
        _record(self._log, item)
        await self._inner.send(item)


class WireTap:
    """Wrap a transport: ``Client(WireTap(InMemoryTransport(server)))``; frames land in ``.frames``."""

    def __init__(self, inner: AbstractAsyncContextManager[Any]) -> None:
        self._inner = inner
        self.frames: list[str] = []

    async def __aenter__(self) -> TransportStreams:
        read, write = await self._inner.__aenter__()
        return _ReadTap(read, self.frames), _WriteTap(write, self.frames)

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        result: bool | None = await self._inner.__aexit__(exc_type, exc, tb)
        return result

    def text(self, since: int = 0) -> str:
        """Every frame from the ``since``-th on (a client's frames after another's), one per line."""
        return "\n".join(self.frames[since:])

    def request_states(self, since: int = 0) -> list[str]:
        """Every ``requestState`` value seen in any frame from the ``since``-th on, in order."""
        found: list[str] = []

        def walk(node: object) -> None:
            if isinstance(node, dict):
                for key, value in node.items():
                    if key == "requestState" and isinstance(value, str):
                        found.append(value)
                    walk(value)
            elif isinstance(node, list):
                for value in node:
                    walk(value)

        for frame in self.frames[since:]:
            walk(json.loads(frame))
        return found

    def reveals(self, secret: str, since: int = 0) -> bool:
        """True if ``secret`` is in any frame from the ``since``-th on, as is or inside base64url (nested
        up to twice) in any token.

        Twice: ``SDKCodec`` carries the SDK's envelope as base64url inside our token's state.
        """
        return secret in self.text(since) or any(
            _inside(token.encode(), secret.encode(), 3) for token in self.request_states(since)
        )


def _inside(data: bytes, needle: bytes, depth: int) -> bool:
    if needle in data:
        return True
    if depth == 0:
        return False
    for run in re.findall(rb"[A-Za-z0-9_-]{8,}", data):
        try:
            raw = base64.urlsafe_b64decode(run + b"=" * (-len(run) % 4))
        except (binascii.Error, ValueError):
            continue
        if _inside(raw, needle, depth - 1):
            return True
    return False


# The detector finds a state a client can read: here, as SDKCodec carries it in a signed token,
# the SDK's envelope in base64url inside our payload in base64url. And it finds nothing else.
_READABLE = "v1.{}.AAAA".format(
    base64.urlsafe_b64encode(
        json.dumps({"s": base64.urlsafe_b64encode(b'{"v":1,"s":"PLAINTEXT"}').decode()}).encode()
    ).decode()
)
assert _inside(_READABLE.encode(), b"PLAINTEXT", 3)
assert not _inside(_READABLE.encode(), b"ELSEWHERE", 3)
