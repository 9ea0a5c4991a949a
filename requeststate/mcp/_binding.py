"""What a requestState token is bound to: the identity (subject, tool) our formats carry.

Our formats bind a token to one ``(subject, tool)`` pair (docs/wire-format.md,
"Bind tag"). Every MCP binding enters through that pair, so a token minted for
one request is refused by every other at the MAC or AEAD check, before any
claim is read, and a replay guard is claimed only after all of them passed.
See docs/wire-format.md, "MCP bindings".
"""

from __future__ import annotations

import hashlib
import json
from _json import make_encoder
from collections.abc import Mapping
from typing import Any, Final, Literal, TypeAlias

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import principal_components
from mcp.server.context import ServerRequestContext

Binding: TypeAlias = Literal["request", "target", "mcpd"]
"""What a token is bound to:

- ``"request"`` (default): method, target, a digest of the arguments, the
  audience and the principal (the SDK's own default binding, in our format);
- ``"target"``: the same without the arguments, for a tool whose arguments
  legitimately change between rounds;
- ``"mcpd"``: exactly what the mcp.d D SDK binds (the bare ``sub`` and
  ``params.name``), so a Python and an mcp.d server share tokens.
"""

BINDINGS: Final[tuple[Binding, ...]] = ("request", "target", "mcpd")

# Each use of a key has its own context label in the bound tool string, so a
# token minted by one use (a boundary, the SDK codec, the bare functions) never
# verifies in another. The labels are JSON array heads, which the bare
# functions' usual tools (a tool name) never are.
BOUNDARY_CONTEXT: Final = "requeststate.mcp/boundary/1"
_CONTEXT_JSON: Final = json.dumps(BOUNDARY_CONTEXT)
SDK_CODEC_CONTEXT: Final = "requeststate.mcp/sdk-codec/1"
SDK_CODEC_TOOL: Final = json.dumps([SDK_CODEC_CONTEXT])

# ASCII output keeps both total (a lone surrogate escapes instead of raising) and
# U+0000-free.
_string: Final = json.encoder.encode_basestring_ascii
# The encoder json.dumps(sort_keys=True, separators=(",", ":")) builds on each call,
# built once (docs/performance.md). Without a cycle check (markers None): arguments
# parsed from JSON have no cycles, and a cyclic value meets the recursion limit instead.
_canonical_parts: Final = make_encoder(
    None, json.JSONEncoder().default, _string, None, ":", ",", True, False, True
)

MISSING_SUB: Final = (
    "the access token has no sub (or an empty one), and bind='mcpd' binds the bare sub: its states would "
    "be shared with anonymous users and with every client whose token has no sub, so requestState is "
    "refused. "
    "Pass allow_missing_sub=True to protect() or Boundary() to bind it as mcp.d does (the empty subject)"
)


def _or_null(text: str | None) -> str:
    return "null" if text is None else _string(text)


def request_target(method: str, params: Mapping[str, Any] | None) -> str:
    """The target a request names: ``params.uri`` for ``resources/read``, else ``params.name``.

    Raises ``ValueError`` when it is missing or not a string.
    """
    field = "uri" if method == "resources/read" else "name"
    value = (params or {}).get(field)
    if not isinstance(value, str):
        raise ValueError(f"{method} has no string params.{field} to bind requestState to")
    return value


def arguments_digest(method: str, params: Mapping[str, Any] | None) -> str:
    """SHA-256 (hex) of the request's arguments as canonical JSON, as the SDK digests them.

    Only ``params.arguments`` enters (an allowlist, as in the SDK): what a
    client legitimately changes between rounds (``requestState``,
    ``inputResponses``, ``_meta``) are its siblings, never part of it.
    Canonical JSON is the SDK's: sorted keys, no spaces, ASCII escapes (so a
    lone surrogate digests instead of raising). ``resources/read`` has no
    arguments: the digest of ``{}``.
    """
    arguments: Any = {}
    if method != "resources/read":
        arguments = (params or {}).get("arguments") or {}
    return hashlib.sha256(canonical_json(arguments).encode("ascii")).hexdigest()


def canonical_json(value: Any) -> str:
    """``value`` as the SDK's canonical JSON: sorted keys, no spaces, ASCII escapes (ASCII text)."""
    return "".join(_canonical_parts(value, 0))


def boundary_tool(
    method: str,
    params: Mapping[str, Any] | None,
    *,
    arguments: bool,
    audience: str | None,
    principal: bool,
) -> str:
    """The tool string a ``"request"`` or ``"target"`` binding seals under.

    A compact JSON array ``[context, method, target, args digest or null,
    audience or null, principal bound]``: JSON escapes every control
    character and lone surrogate, so it never contains U+0000 (our separator)
    and always encodes; each member has its own slot, so no two requests
    share a string. ``principal`` tells an anonymous round from one whose
    principal source returned ``""``, as the SDK's "principal drift" does.
    """
    # The compact JSON text of that array, written directly (the same bytes as
    # json.dumps(..., separators=(",", ":"))): this runs on every round.
    digest = f'"{arguments_digest(method, params)}"' if arguments else "null"
    bound_audience = "null" if audience is None else _string(audience)
    return (
        f"[{_CONTEXT_JSON},{_string(method)},{_string(request_target(method, params))},"
        f"{digest},{bound_audience},{'true' if principal else 'false'}]"
    )


def mcpd_tool(method: str, params: Mapping[str, Any] | None) -> str:
    """The tool string mcp.d binds: ``params.name``, or ``""`` for ``resources/read``."""
    return "" if method == "resources/read" else request_target(method, params)


def authenticated_principal(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """What the SDK's ``authenticated_principal`` returns: ``[client_id, issuer, subject]``, compact JSON.

    The principal of the verified access token (``null`` for a component the
    token lacks), or ``None`` when the request is unauthenticated. Written
    directly, as the tool strings are (docs/performance.md).
    """
    token = get_access_token()
    if token is None:
        return None
    client, issuer, subject = principal_components(token)
    return f"[{_string(client)},{_or_null(issuer)},{_or_null(subject)}]"


def access_token_subject(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The bare ``sub`` of the verified access token (what mcp.d binds).

    ``None`` when the request is unauthenticated, and when the token has no
    ``sub``: as in mcp.d, both then bind the empty subject, one identity
    shared by every anonymous user and every client whose token has no
    ``sub``. ``bind="mcpd"`` uses it only with ``allow_missing_sub=True``.
    """
    token = get_access_token()
    return None if token is None else token.subject


def access_token_sub_required(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The bare ``sub`` of the verified access token; ``None`` when unauthenticated.

    ``bind="mcpd"``'s default principal source. Raises ``ValueError`` for an
    authenticated request whose token has no ``sub`` (or an empty one), which
    mcp.d would bind as the empty subject, the identity of anonymous users.
    """
    token = get_access_token()
    if token is None:
        return None
    if not token.subject:  # no sub, or an empty one: either is the anonymous users' subject
        raise ValueError(MISSING_SUB)
    return token.subject
