"""Serve a test server from tests/support/mcp_servers.py over stdio, for the subprocess tests.

Run as ``python -m tests.mcp_stdio_server`` from the repository root. The
environment chooses it: ``REQUESTSTATE_KEYS`` (shared secret, base64url),
``RS_TEST_TIER`` (mcpserver, lowlevel), ``RS_TEST_SHAPE`` (boundary, codec),
``RS_TEST_MODE`` (signed, encrypted). Logs go to stderr; stdout is the protocol.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import cast

import anyio
from mcp.server import MCPServer
from mcp.server.stdio import stdio_server

import requeststate as rs
from tests.support.mcp_servers import Shape, Tier, build


async def _serve() -> None:
    built = build(
        cast(Tier, os.environ["RS_TEST_TIER"]),
        cast(Shape, os.environ["RS_TEST_SHAPE"]),
        rs.KeyRing.from_env(),
        rs.Mode(os.environ["RS_TEST_MODE"]),
    )
    server = built.server
    if isinstance(server, MCPServer):
        await server.run_stdio_async()
        return
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    anyio.run(_serve)
