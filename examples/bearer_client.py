"""A client of ``bearer_server.py``: the user of a bearer token books a table, answering round 1's question.

Run (see ``bearer_server.py``)::

    python examples/bearer_client.py http://127.0.0.1:8000/mcp tok-alice "Chez Ada" 2026-12-01
"""

from __future__ import annotations

import sys

import anyio
import httpx2
from mcp import Client
from mcp.client.context import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp_types import ElicitRequestParams, ElicitResult


async def book_as(url: str, bearer: str, restaurant: str, date: str) -> str:
    """Call ``book`` as the user of ``bearer``, answering its question with ``date``: the result's text.

    The SDK's ``Client`` runs the rounds: it hands round 1's question to ``elicitation_callback``,
    then calls again with the answer and the ``requestState`` round 1 returned. To drive them
    yourself: ``client.session.call_tool(..., allow_input_required=True)``.
    """

    async def answer(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        return ElicitResult(action="accept", content={"date": date})

    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {bearer}"}) as http,
        Client(streamable_http_client(url, http_client=http), elicitation_callback=answer) as client,
    ):
        result = await client.call_tool("book", {"restaurant": restaurant})
    return " ".join(part.text for part in result.content if part.type == "text")


if __name__ == "__main__":
    url, bearer, restaurant, date = sys.argv[1:5]
    print(anyio.run(book_as, url, bearer, restaurant, date))
