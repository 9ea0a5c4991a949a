"""Serve a conformance server over streamable HTTP at ``http://127.0.0.1:PORT/mcp``, in one configuration.

    python -m tests.conformance.serve SERVER CONFIG PORT

``SERVER`` is ``sdk`` (the python-sdk's everything-server, an ``MCPServer``) or
``fastmcp`` (FastMCP's conformance server). ``CONFIG`` is one of:

- ``as-shipped``: the server as its authors run it, with the SDK's own ``RequestStateBoundary``;
- ``MODE[+guard][+reelicit]``: ``protect()`` with a fresh key in ``MODE`` (``signed``,
  ``encrypted``, ``xchacha``), a ``MemoryGuard`` with ``+guard``, ``on_invalid="reelicit"``
  with ``+reelicit``;
- ``plain-json``: broken on purpose for the probe: the SDK's boundary kept, its codec
  replaced by one that writes the sealed envelope as plain JSON, unsigned.
"""

from __future__ import annotations

import argparse
import os
from typing import Any, Final

from mcp.server.request_state import InvalidRequestState, RequestStateBoundary, RequestStateSecurity

import requeststate as rs
from requeststate.mcp import protect
from requeststate.mcp._install import chain

SERVERS: Final = ("sdk", "fastmcp")
MODES: Final = tuple(rs.Mode)


class PlainJSON:
    """An SDK ``RequestStateCodec`` that protects nothing: the envelope goes out as the JSON it is."""

    def seal(self, payload: bytes) -> str:
        return payload.decode()

    def unseal(self, token: str) -> bytes:
        try:
            return token.encode()
        except UnicodeEncodeError as exc:  # a lone surrogate: refused as the SDK's codecs refuse junk
            raise InvalidRequestState("not UTF-8") from exc


def _break(server: object, name: str) -> None:
    middleware = chain(server)
    at = next(i for i, entry in enumerate(middleware) if isinstance(entry, RequestStateBoundary))
    middleware[at] = RequestStateBoundary(RequestStateSecurity(codec=PlainJSON()), default_audience=name)


def configure(server: Any, name: str, config: str) -> None:
    """Apply ``config`` (see the module's docstring) to ``server``; ``ValueError`` for an unknown one."""
    if config == "as-shipped":
        return
    if config == "plain-json":
        _break(server, name)
        return
    mode, *flags = config.split("+")
    if mode not in MODES or not set(flags) <= {"guard", "reelicit"}:
        raise ValueError(f"unknown configuration {config!r}")
    guard = rs.MemoryGuard() if "guard" in flags else None
    codec = rs.Codec(rs.KeyRing(os.urandom(32)), mode=rs.Mode(mode), guard=guard)
    protect(server, codec, on_invalid="reelicit" if "reelicit" in flags else "error")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("server", choices=SERVERS)
    parser.add_argument("config")
    parser.add_argument("port", type=int)
    args = parser.parse_args()
    # Imported here: each server's module builds its server on import, and the other's
    # framework need not be installed.
    if args.server == "sdk":
        from tests.conformance import everything_server

        configure(everything_server.mcp, everything_server.mcp.name, args.config)
        everything_server.mcp.run(
            transport="streamable-http",
            port=args.port,
            event_store=everything_server.event_store,
            retry_interval=100,  # as the server's own main(): SSE resumption polls every 100 ms
        )
    else:
        import uvicorn

        from tests.conformance import fastmcp_server

        configure(fastmcp_server.server, fastmcp_server.server.name, args.config)
        app = fastmcp_server.build_app()  # type: ignore[no-untyped-call]  # upstream's, untyped
        uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
