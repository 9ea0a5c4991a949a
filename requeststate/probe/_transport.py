"""The wire to the server under test, bounded: no answer can exhaust the probe's memory.

The SDK's stdio client reads a line of any length, and its HTTP client a JSON body of any
size. A hostile server could send one endless line. Parsed, a message costs far more than
its bytes (a megabyte of ``[{},{},...]`` is over a hundred megabytes of Python objects).
So each message is bounded both in bytes and in JSON values (counted by the separators,
``,`` ``{`` ``[``, a bound from above), and over stdio anything that is not a JSON-RPC
message ends the probe with a setup error (exit 2): stdout carries the protocol.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from typing import Final, TextIO

import anyio
import httpx2
from anyio.abc import Process
from mcp.client._transport import TransportStreams
from mcp.shared.message import SessionMessage
from mcp_types import jsonrpc_message_adapter

MAX_MESSAGE_BYTES: Final = 4 << 20
"""The largest message (a line over stdio, a response body over HTTP) the probe reads."""
MAX_MESSAGE_VALUES: Final = 50_000
"""The most JSON values in one message, counted from above by its separators."""
STDERR_TAIL_BYTES: Final = 64 << 10
"""How much of a server's stderr the probe keeps: its last 64 KiB, in memory, whatever it writes."""
_GRACE: Final = 2.0  # seconds for a server to exit once its stdin closes, then for a SIGTERM


class ProtocolBreak(Exception):
    """The server broke the protocol (not JSON-RPC, or a message past the bounds): the probe stops."""


def _values(data: bytes) -> int:
    return data.count(b",") + data.count(b"{") + data.count(b"[")


def _too_large(size: int, values: int) -> str | None:
    if size > MAX_MESSAGE_BYTES:
        return f"the server sent a message over {MAX_MESSAGE_BYTES >> 20} MiB"
    if values > MAX_MESSAGE_VALUES:
        return f"the server sent a message of over {MAX_MESSAGE_VALUES:,} JSON values"
    return None


def _message(line: bytes) -> SessionMessage:
    too_large = _too_large(len(line), _values(line))
    if too_large is not None:
        raise ProtocolBreak(too_large)
    try:
        return SessionMessage(jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError:  # pydantic's ValidationError, for text that is not JSON-RPC or nests too deep
        raise ProtocolBreak(
            "the server wrote a line to stdout that is not a JSON-RPC message, or nests too deep "
            "(stdout carries the protocol: is this an MCP server over stdio? a server logs to stderr)"
        ) from None


@asynccontextmanager
async def stdio(
    command: Sequence[str], env: Mapping[str, str], errlog: TextIO
) -> AsyncIterator[TransportStreams]:
    """Start ``command`` and talk JSON-RPC over its stdin and stdout, one bounded line per message.

    Its stderr is read as it comes, and its last ``STDERR_TAIL_BYTES`` written to ``errlog``
    when it is gone: a server that floods stderr costs the probe neither memory nor disk.
    """
    process = await anyio.open_process(
        list(command), env=dict(env), stderr=subprocess.PIPE, start_new_session=True
    )
    tail = bytearray()
    incoming_writer, incoming = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    outgoing, outgoing_reader = anyio.create_memory_object_stream[SessionMessage](0)
    broken = False

    async def read() -> None:
        assert process.stdout is not None
        pending = bytearray()
        async with incoming_writer:
            async for chunk in process.stdout:
                pending += chunk
                if b"\n" not in chunk:
                    if len(pending) > MAX_MESSAGE_BYTES:
                        raise ProtocolBreak(f"the server sent a message over {MAX_MESSAGE_BYTES >> 20} MiB")
                    continue
                *lines, rest = pending.split(b"\n")
                pending = bytearray(rest)
                for line in lines:
                    if line.strip():
                        try:
                            await incoming_writer.send(_message(bytes(line)))
                        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                            return  # the session is gone

    async def drain_stderr() -> None:
        assert process.stderr is not None
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            async for chunk in process.stderr:
                tail.extend(chunk)
                del tail[:-STDERR_TAIL_BYTES]

    async def guarded_read() -> None:
        nonlocal broken
        try:
            await read()
        except ProtocolBreak:
            broken = True  # no grace for the server at the end: it may be blocked writing more
            raise

    async def write() -> None:
        assert process.stdin is not None
        try:
            async with outgoing_reader:
                async for message in outgoing_reader:
                    text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send(text.encode("utf-8") + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await incoming_writer.aclose()  # the server is gone: the session sees the connection end

    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(guarded_read)
            tasks.start_soon(write)
            tasks.start_soon(drain_stderr)
            try:
                yield incoming, outgoing
            finally:
                with anyio.CancelScope(shield=True):
                    await _stop(process, at_once=broken)
                tasks.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await _release(process)
        errlog.write(_last_lines(bytes(tail)))
        errlog.flush()


def _last_lines(tail: bytes) -> str:
    """The whole lines of a tail of stderr (the first is cut where the tail began, if it was)."""
    if len(tail) >= STDERR_TAIL_BYTES:
        tail = tail.partition(b"\n")[2]
    return tail.decode("utf-8", "replace")


async def _stop(process: Process, *, at_once: bool) -> None:
    """Close the server's stdin and give it a moment to exit (none if it broke the protocol), then end
    its process group: SIGTERM, and SIGKILL if it is still there."""
    assert process.stdin is not None
    with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    if not at_once:
        with anyio.move_on_after(_GRACE):
            while process.returncode is None:
                await anyio.sleep(0.01)
    if process.returncode is None:
        if sys.platform == "win32":  # pragma: no cover
            process.kill()
        else:
            from mcp.os.posix.utilities import terminate_posix_process_tree

            await terminate_posix_process_tree(process, _GRACE)


async def _release(process: Process) -> None:
    """Once the reader is gone, read the server's stdout to its end, then reap the process.

    A reader that stopped early (a session done with an endless listing) leaves the pipe paused
    with data in it; it closes only at its end of file, and the server is gone, so the rest is short."""
    assert process.stdout is not None
    with anyio.move_on_after(_GRACE), suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        async for _ in process.stdout:
            pass
    with anyio.move_on_after(_GRACE), suppress(OSError):
        await process.aclose()


# --- streamable HTTP ---------------------------------------------------------------------------------------


class ResponseTooLarge(httpx2.StreamError):
    """A response body past the bounds; the SDK answers its request with a parse error, never a result."""


class _BoundedStream(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream) -> None:
        self._inner = inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        size = values = 0
        async for chunk in self._inner:
            size, values = size + len(chunk), values + _values(chunk)
            too_large = _too_large(size, values)
            if too_large is not None:
                raise ResponseTooLarge(too_large)
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class BoundedTransport(httpx2.AsyncBaseTransport):
    """An HTTP transport whose response bodies are bounded like stdio's lines (a whole event stream
    counts as one message: the probe's requests are answered in a few small events)."""

    def __init__(self) -> None:
        self._inner = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        return httpx2.Response(
            response.status_code,
            headers=response.headers,
            stream=_BoundedStream(response.stream),
            extensions=response.extensions,
            request=request,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()
