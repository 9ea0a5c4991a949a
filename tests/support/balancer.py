"""A TCP load balancer on a loopback port, for the probe's tests of one address with several workers.

Each connection it accepts goes to the next of its backends' ports in turn (round robin), as a layer-4
load balancer does: a client's requests on one connection reach one worker, a new connection the next.
Round robin, not at random: a test must not pass or fail by chance.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress

from tests.support.processes import free_port


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with suppress(ConnectionError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    writer.close()


async def _serve(ports: Sequence[int], port: int, ready: threading.Event, stop: asyncio.Event) -> None:
    turns = itertools.cycle(ports)
    connections: set[asyncio.Task[None]] = set()

    async def forward(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        connections.add(task)
        backend_reader, backend_writer = await asyncio.open_connection("127.0.0.1", next(turns))
        try:
            await asyncio.gather(_pipe(client_reader, backend_writer), _pipe(backend_reader, client_writer))
        finally:
            for writer in (client_writer, backend_writer):
                writer.close()
            connections.discard(task)

    server = await asyncio.start_server(forward, "127.0.0.1", port)
    async with server:
        ready.set()
        await stop.wait()
        # Every connection closed before the loop is: a stream left open warns when collected.
        for task in list(connections):
            task.cancel()
        await asyncio.gather(*connections, return_exceptions=True)


@contextmanager
def balancing(urls: Sequence[str]) -> Iterator[str]:
    """A balancer in front of the MCP ``urls`` (``http://127.0.0.1:PORT/mcp``) until the block ends:
    its own MCP URL."""
    ports = [int(url.split(":")[2].split("/")[0]) for url in urls]
    port = free_port()
    ready = threading.Event()
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()
    thread = threading.Thread(
        target=loop.run_until_complete, args=(_serve(ports, port, ready, stop),), daemon=True
    )
    thread.start()
    assert ready.wait(10), "the balancer did not start"
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)
        loop.close()
