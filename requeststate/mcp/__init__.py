"""requeststate for the official Python MCP SDK (``mcp`` >= 2.3, protocol 2026-07-28).

Install with the ``mcp`` extra (``pip install 'requeststate[mcp]'``); the core
never imports this package.

The SDK already protects ``requestState``: ``MCPServer`` installs an
ephemeral AES-256-GCM ``RequestStateBoundary`` that binds the method, the
target, a digest of the arguments, an audience (the server's name) and the
authenticated principal. ``protect`` replaces it with ``Boundary``, which
binds all of that too, in our formats, and adds what the SDK's does not have:

    import requeststate as rs
    from requeststate.mcp import protect

    protect(server, rs.Codec.from_env(guard=RedisGuard.from_url(url)))

``Codec.from_env`` lets the deployment choose the keys, mode and ttl
(``REQUESTSTATE_KEYS``, ``_MODE``, ``_TTL``); a ``KeyRing`` with options works too.

- a shared, rotating ``KeyRing`` (the SDK's default key dies with the process);
- single-use tokens: a replay guard claimed after every other check;
- exactly-once targets (``exactly_once={"book"}``): an identical retry gets the first call's answer;
- ``mode="signed"`` or ``"xchacha"``, re-elicit on refusal (``on_invalid="reelicit"``);
- ``bind="mcpd"``: tokens shared with mcp.d servers behind one load balancer;
- one log line per refusal with method, target, JSON-RPC id and reason;
- OpenTelemetry counts of what it mints, accepts and refuses, by method.

Handlers keep minting and reading plaintext: they return
``InputRequiredResult(request_state="...")`` and read ``ctx.request_state``
(``params.request_state`` on the low-level ``Server``) on the retry.

``use_codec(server, keys)`` (or ``MCPServer(..., request_state_security=sdk_security(keys))``)
keeps the SDK's boundary and plugs our formats in as its codec (``SDKCodec``):
a shared key ring with the SDK's checks, but no guard (its codec seam runs
before its binding checks).

The principal is never read from the request: it is the SDK's
``authenticated_principal`` (client id, issuer and subject of the verified
bearer token). Without authentication (stdio, in-memory, HTTP without
``auth=``) no principal is bound: anyone who holds a token can redeem it for
the same request.
"""

from __future__ import annotations

try:  # the extra's two distributions, with the install hint when either is missing
    import mcp  # noqa: F401 (presence only: the names come from the modules below)
    import mcp_types  # noqa: F401
except ImportError as missing:
    raise ImportError(
        "requeststate.mcp needs the mcp extra: pip install 'requeststate[mcp]'", name=missing.name
    ) from missing

from ._binding import Binding, access_token_subject, arguments_digest, request_target
from ._boundary import IN_PROGRESS_MESSAGE, INVALID_MESSAGE, UNCHECKED_MESSAGE, Boundary, protect
from ._config import BoundaryOptions, OnInvalid, SubjectSource
from ._sdk import SDKCodec, sdk_security, use_codec

__all__ = [
    "INVALID_MESSAGE",
    "IN_PROGRESS_MESSAGE",
    "UNCHECKED_MESSAGE",
    "Binding",
    "Boundary",
    "BoundaryOptions",
    "OnInvalid",
    "SDKCodec",
    "SubjectSource",
    "access_token_subject",
    "arguments_digest",
    "protect",
    "request_target",
    "sdk_security",
    "use_codec",
]
