"""A TCP relay on loopback that the nemesis controls: the fleet's balancer, and the link to its store.

One relay places each connection it accepts on one of its backends' ports, in turn, as a layer-4
load balancer does, and on the next one when a backend refuses the connection (a killed worker, or
one restarting: a balancer's health check, at its quickest). In front of a store it has one
backend, and the nemesis can slow it (each chunk held ``delay`` seconds) or cut it: every byte
dropped, as in a partition, until it is healed, when every connection it dropped bytes of is closed
(their streams are broken) and new ones go through.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress

from scripts.redis_servers import free_loopback_port


class Relay:
    """A running relay: its port, and the controls (``delay``, ``cut``, ``heal``) the nemesis turns."""

    def __init__(self, loop: asyncio.AbstractEventLoop, backends: Sequence[int], port: int) -> None:
        self.port = port
        self.delay = 0.0
        """Seconds each chunk is held, each way."""
        self._loop = loop
        self._turns = itertools.cycle(backends)
        self._count = len(backends)
        self._cut = False
        self._writers: set[asyncio.StreamWriter] = set()

    def cut(self) -> None:
        """Drop every byte from now on, each way, connections left open: a partition."""
        self._cut = True

    def heal(self) -> None:
        """End the cut: close every connection open now (bytes were lost), let new ones through."""

        def close() -> None:
            self._cut = False
            self.close_connections()

        self._loop.call_soon_threadsafe(close)

    def close_connections(self) -> None:
        """Close every connection it relays now (on its event loop)."""
        for writer in list(self._writers):
            writer.close()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with suppress(ConnectionError, OSError):
            while data := await reader.read(65536):
                if self.delay:
                    await asyncio.sleep(self.delay)
                if not self._cut:
                    writer.write(data)
                    await writer.drain()
        writer.close()

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        for _ in range(self._count):
            with suppress(OSError):
                return await asyncio.open_connection("127.0.0.1", next(self._turns))
        return None

    async def forward(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        backend = await self._connect()
        if backend is None:  # every backend down: the client sees its connection closed
            writer.close()
            return
        backend_reader, backend_writer = backend
        self._writers |= {writer, backend_writer}
        try:
            await asyncio.gather(self._pipe(reader, backend_writer), self._pipe(backend_reader, writer))
        finally:
            for each in (writer, backend_writer):
                each.close()
                self._writers.discard(each)


@contextmanager
def relays() -> Iterator[Relays]:
    """A thread running an event loop, on which ``Relays.start`` opens relays; all closed on exit."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    opened = Relays(loop)
    try:
        yield opened
    finally:
        asyncio.run_coroutine_threadsafe(opened.close(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


class Relays:
    """Opens relays on one event loop (``relays()``'s)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._opened: list[tuple[asyncio.Server, Relay]] = []

    def start(self, backends: Sequence[int]) -> Relay:
        """A relay on a free loopback port to ``backends`` (ports on loopback), serving once this returns."""
        relay = Relay(self._loop, backends, free_loopback_port())

        async def listen() -> asyncio.Server:
            return await asyncio.start_server(relay.forward, "127.0.0.1", relay.port)

        self._opened.append((asyncio.run_coroutine_threadsafe(listen(), self._loop).result(10), relay))
        return relay

    async def close(self) -> None:
        """Stop listening, close every connection, and let each relayed pair finish."""
        for server, relay in self._opened:
            server.close()
            relay.close_connections()
        await asyncio.sleep(0.2)  # each pipe reads its closed end and returns
