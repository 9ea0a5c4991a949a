"""A TCP load balancer on a loopback port, for the tests of one address with several workers.

It places each connection it accepts on one of its backends' ports, as a layer-4 load balancer does: a
client's requests on one connection reach one worker. ``round-robin`` places a new connection on the
next worker in turn; ``client-ip`` on the worker its client's address hashes to (nginx ``ip_hash``, a
Kubernetes Service with ``sessionAffinity: ClientIP``): every connection from one client reaches one
worker, and on loopback every client is 127.0.0.1. Neither at random: a test must not pass or fail by
chance.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import zlib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from tests.support.processes import free_port

Placement: TypeAlias = Literal["round-robin", "client-ip"]


@dataclass
class Balancer:
    """A running balancer: its MCP URL, and how many connections it placed on each backend's port."""

    url: str
    placed: Counter[int] = field(default_factory=Counter)


async def _pipe(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    *,
    watch: Callable[[bytes], None] | None = None,
    cut: asyncio.Event | None = None,
) -> None:
    """Copy ``reader`` to ``writer``, showing each chunk to ``watch``; once ``cut`` is set, drop the rest."""
    with suppress(ConnectionError):
        while data := await reader.read(65536):
            if watch is not None:
                watch(data)
            if cut is not None and cut.is_set():
                break
            writer.write(data)
            await writer.drain()
    writer.close()


def _placer(ports: Sequence[int], placement: Placement) -> Callable[[str], int]:
    """The backend port for a connection from a client's address."""
    if placement == "client-ip":
        return lambda client: ports[zlib.crc32(client.encode()) % len(ports)]
    turns = itertools.cycle(ports)
    return lambda client: next(turns)


async def _serve(
    ports: Sequence[int],
    placement: Placement,
    balancer: Balancer,
    port: int,
    ready: threading.Event,
    stop: asyncio.Event,
    lose_answer_to: bytes | None,
) -> None:
    place = _placer(ports, placement)
    connections: set[asyncio.Task[None]] = set()

    async def forward(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        connections.add(task)
        backend = place(client_writer.get_extra_info("peername")[0])
        balancer.placed[backend] += 1
        backend_reader, backend_writer = await asyncio.open_connection("127.0.0.1", backend)
        try:
            lost = asyncio.Event()

            def watch(data: bytes) -> None:
                if lose_answer_to is not None and lose_answer_to in data:
                    lost.set()  # before the request goes on: its answer is lost

            await asyncio.gather(
                _pipe(client_reader, backend_writer, watch=watch),
                _pipe(backend_reader, client_writer, cut=lost),
            )
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


def port_of(url: str) -> int:
    """The port of an MCP URL ``http://127.0.0.1:PORT/mcp``."""
    return int(url.split(":")[2].split("/")[0])


@contextmanager
def balancing(
    urls: Sequence[str], placement: Placement = "round-robin", *, lose_answer_to: bytes | None = None
) -> Iterator[Balancer]:
    """A balancer in front of the MCP ``urls`` (``http://127.0.0.1:PORT/mcp``) until the block ends.

    ``lose_answer_to``: once a connection's request holds these bytes (``b"requestState"``, say),
    whatever the backend answers on it is dropped and the client's side closed: the server ran
    the request, and its answer never arrived (a dropped connection, as a client sees one).
    """
    ports = [port_of(url) for url in urls]
    port = free_port()
    balancer = Balancer(f"http://127.0.0.1:{port}/mcp")
    ready = threading.Event()
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()
    thread = threading.Thread(
        target=loop.run_until_complete,
        args=(_serve(ports, placement, balancer, port, ready, stop, lose_answer_to),),
        daemon=True,
    )
    thread.start()
    assert ready.wait(10), "the balancer did not start"
    try:
        yield balancer
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)
        loop.close()
