"""A client of ``fastmcp_bearer_server.py``: a bearer token's user books a table, answering round 1.

Run (see ``fastmcp_bearer_server.py``)::

    python examples/fastmcp_bearer_client.py http://127.0.0.1:8000/mcp tok-alice "Chez Ada" 2026-12-01
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
from fastmcp import Client


async def book_as(url: str, bearer: str, restaurant: str, date: str) -> str:
    """Call ``book`` as the user of ``bearer``, answering its question with ``date``: the result's text.

    FastMCP's ``Client`` sends ``auth=`` as a bearer token and runs the rounds: it hands round
    1's question to ``elicitation_handler``, then calls again with the answer and the
    ``requestState`` round 1 returned. To drive them yourself: ``client.session.call_tool(...,
    allow_input_required=True)`` (docs/fastmcp.md, "Driving rounds by hand").
    """

    async def answer(message: str, response_type: Any, params: Any, context: Any) -> dict[str, str]:
        return {"date": date}

    async with Client(url, auth=bearer, elicitation_handler=answer) as client:
        result = await client.call_tool("book", {"restaurant": restaurant})
    return " ".join(part.text for part in result.content if part.type == "text")


if __name__ == "__main__":
    url, bearer, restaurant, date = sys.argv[1:5]
    print(anyio.run(book_as, url, bearer, restaurant, date))
