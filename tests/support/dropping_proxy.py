"""A TCP proxy on loopback that loses the answer to a request: a dropped connection, as a client sees one.

Every connection is forwarded to one backend port. Once a connection's request holds ``trigger``
(bytes the test chooses, such as ``b"requestState"``), everything the backend answers on it is
discarded and the client's side is closed: the server ran the request, and its answer never arrived.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from tests.support.processes import free_port


async def _serve(
    backend: int, port: int, trigger: bytes, ready: threading.Event, stop: asyncio.Event
) -> None:
    connections: set[asyncio.Task[None]] = set()

    async def forward(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        connections.add(task)
        backend_reader, backend_writer = await asyncio.open_connection("127.0.0.1", backend)
        dropped = asyncio.Event()

        async def requests() -> None:
            with suppress(ConnectionError):
                while data := await client_reader.read(65536):
                    if trigger in data:
                        dropped.set()  # before the request goes on: its answer is lost
                    backend_writer.write(data)
                    await backend_writer.drain()

        async def answers() -> None:
            with suppress(ConnectionError):
                while data := await backend_reader.read(65536):
                    if dropped.is_set():
                        break  # the answer to the trigger, lost: the client's connection closes
                    client_writer.write(data)
                    await client_writer.drain()
            client_writer.close()

        try:
            await asyncio.gather(requests(), answers())
        finally:
            for writer in (client_writer, backend_writer):
                writer.close()
            connections.discard(task)

    server = await asyncio.start_server(forward, "127.0.0.1", port)
    async with server:
        ready.set()
        await stop.wait()
        for task in list(connections):
            task.cancel()
        await asyncio.gather(*connections, return_exceptions=True)


@contextmanager
def dropping(backend_url: str, trigger: bytes) -> Iterator[str]:
    """A proxy to the MCP URL ``backend_url`` losing the answer to a request holding ``trigger``; its URL."""
    backend = int(backend_url.split(":")[2].split("/")[0])
    port = free_port()
    ready = threading.Event()
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()
    thread = threading.Thread(
        target=loop.run_until_complete, args=(_serve(backend, port, trigger, ready, stop),), daemon=True
    )
    thread.start()
    assert ready.wait(10), "the proxy did not start"
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)
        loop.close()
