"""Drive examples/booking_server.py with the SDK's own client: it spawns the server over stdio.

    python examples/booking_client.py "Chez Ada"                           # asks you on the terminal
    python examples/booking_client.py "Chez Ada" --date 2026-12-01 --party 4   # no questions
    python examples/booking_client.py "Chez Ada" --url http://127.0.0.1:8000/mcp  # a server on HTTP
    python examples/booking_client.py "Chez Ada" --url http://127.0.0.1:8000/mcp --bearer tok-alice

The client answers each round's question; the SDK's ``Client`` retries with the
echoed ``requestState`` for you. The SDK's stdio client passes the server only a
safe subset of the environment, so the key and mode are handed over explicitly.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.context import ClientRequestContext
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import ElicitRequestParams, ElicitResult, TextContent


def _answers(date: str | None, party: int | None) -> Any:
    async def on_elicit(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        asks_date = "date" in params.message.lower()
        given: str | int | None = date if asks_date else party
        if given is None:
            reply = input(f"{params.message} ").strip()
            if not reply:
                return ElicitResult(action="decline")
            given = reply if asks_date else int(reply)
        return ElicitResult(action="accept", content={"date" if asks_date else "party": given})

    return on_elicit


async def _book(args: argparse.Namespace) -> None:
    here = Path(__file__).resolve().parent
    server: Any = args.url or StdioServerParameters(
        command=sys.executable,
        args=[str(here / "booking_server.py")],
        cwd=here.parent,
        env={
            name: os.environ[name]
            for name in ("REQUESTSTATE_KEYS", "REQUESTSTATE_MODE", "REQUESTSTATE_TTL")
            if name in os.environ
        },
    )
    headers = {"Authorization": f"Bearer {args.bearer}"} if args.bearer else {}
    async with httpx2.AsyncClient(headers=headers) as http:
        if args.url:
            server = streamable_http_client(args.url, http_client=http)
        async with Client(server, elicitation_callback=_answers(args.date, args.party)) as client:
            result = await client.call_tool("book_table", {"restaurant": args.restaurant})
            for part in result.content:
                if isinstance(part, TextContent):
                    print(part.text)


def main() -> None:
    """Book a table through the wizard."""
    parser = argparse.ArgumentParser(description="Drive the booking wizard.")
    parser.add_argument("restaurant")
    parser.add_argument("--date")
    parser.add_argument("--party", type=int)
    parser.add_argument("--url", help="a streamable HTTP server instead of spawning one over stdio")
    parser.add_argument("--bearer", help="an access token for --url (booking_http_server.py)")
    anyio.run(_book, parser.parse_args())


if __name__ == "__main__":
    main()
