"""requeststate for the official Python MCP SDK (``mcp`` >= 2.3, protocol 2026-07-28).

Install with the ``mcp`` extra (``pip install 'requeststate[mcp]'``); the core
never imports this module. One line protects every ``requestState`` a server
hands out, on an ``MCPServer`` or on the low-level ``Server``::

    import requeststate as rs
    from requeststate.mcp import protect

    protect(server, rs.KeyRing.from_env())   # encrypted, ttl 300 s, bound to user + tool

Handlers keep minting and reading plaintext: they return
``InputRequiredResult(request_state="...")`` and read ``ctx.request_state``
(``params.request_state`` on the low-level ``Server``) on the retry. The
boundary seals the state on the way out and opens it on the way in, before any
handler runs.

Two shapes:

- ``protect(server, keys, ...)`` installs ``Boundary``, our middleware, in
  place of the SDK's ``RequestStateBoundary``. Tokens are ``requeststate``
  tokens (``v1.``/``v1e.``, the mcp.d format) bound to the authenticated
  subject and to the request target (``tools/call:<name>``,
  ``prompts/get:<name>``, ``resources/read:<uri>``). A refused echo answers
  the SDK's frozen -32602 "Invalid or expired requestState" (the default) or
  is dropped so the handler asks again (``on_invalid="reelicit"``).
- ``use_codec(server, keys, ...)`` (or ``MCPServer(...,
  request_state_security=sdk_security(keys))``) keeps the SDK's own boundary
  and plugs our formats in as its codec (``SDKCodec``). The SDK then binds the
  method, target, arguments, audience and principal; refusals are always -32602.

The subject is never read from the request: by default it is the SDK's
``authenticated_principal`` (client id, issuer and subject of the verified
bearer token). On a transport without authentication (stdio, in-memory, HTTP
without ``auth=``) there is no subject, and the state is bound to the target
alone: any caller who obtains a token can redeem it at that target.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Final, Literal, TypeAlias

try:  # the extra's two distributions, with the install hint when either is missing
    import mcp  # noqa: F401 (presence only: the names come from the imports below)
    import mcp_types  # noqa: F401
except ImportError as missing:
    raise ImportError(
        "requeststate.mcp needs the mcp extra: pip install 'requeststate[mcp]'", name=missing.name
    ) from missing
from mcp.server import MCPServer, Server
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.server.request_state import (
    InvalidRequestState,
    RequestStateBoundary,
    RequestStateSecurity,
    authenticated_principal,
)
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS
from mcp_types.methods import INPUT_REQUIRED_METHODS, is_input_required

import requeststate as rs

__all__ = [
    "INVALID_MESSAGE",
    "Binding",
    "Boundary",
    "OnInvalid",
    "SDKCodec",
    "SubjectSource",
    "protect",
    "request_target",
    "sdk_security",
    "use_codec",
]

logger = logging.getLogger(__name__)

INVALID_MESSAGE: Final = "Invalid or expired requestState"
"""The SDK's frozen wire message for a refused echo; the reason stays in the server log."""
_INVALID_DATA: Final = {"reason": "invalid_request_state"}

Binding: TypeAlias = Literal["subject_and_tool", "subject", "none"]
"""What a token is bound to: the subject and the request target (default), the subject alone, nothing."""
OnInvalid: TypeAlias = Literal["error", "reelicit"]
"""What a refused echo gets: the frozen -32602 error (default), or no state (the handler asks again)."""
SubjectSource: TypeAlias = Callable[[ServerRequestContext[Any, Any]], "str | None"]
"""Reads the authenticated subject from the SDK's auth context; ``None`` when unauthenticated."""
Keys: TypeAlias = "rs.KeyRing | bytes"

_BINDINGS: Final = ("subject_and_tool", "subject", "none")
_ON_INVALID: Final = ("error", "reelicit")
_ANY_SERVER: Final = (MCPServer, Server)


def request_target(method: str, params: Mapping[str, Any] | None) -> str:
    """The target a token is bound to: ``tools/call:book``, ``prompts/get:p``, ``resources/read:<uri>``.

    The method is part of the target so a tool and a prompt of the same name
    never share state. Raises ``ValueError`` when the name (or uri) is missing
    or not a string.
    """
    field = "uri" if method == "resources/read" else "name"
    value = (params or {}).get(field)
    if not isinstance(value, str):
        raise ValueError(f"{method} has no string params.{field} to bind requestState to")
    return f"{method}:{value}"


def _warn_if_ephemeral(ring: rs.KeyRing) -> None:
    if ring.is_ephemeral:
        logger.warning(
            "requestState keys are ephemeral (KeyRing %s): every token dies with this process. "
            "That is right for one stdio process only; behind HTTP with several workers, replicas "
            "or any restart, every multi-round retry will be refused. Share one KeyRing between "
            "all workers (KeyRing.from_env() or a secret store).",
            ring.fingerprint,
        )


def _chain(server: object) -> list[ServerMiddleware[Any]]:
    if not isinstance(server, _ANY_SERVER):
        raise TypeError(f"server must be an mcp MCPServer or Server, not {type(server).__name__}")
    return server.middleware


def _install(server: object, boundary: ServerMiddleware[Any]) -> None:
    """Put ``boundary`` where the SDK puts its own, replacing every ``RequestStateBoundary``."""
    chain = _chain(server)
    if any(isinstance(entry, Boundary) for entry in chain):
        raise ValueError("this server's requestState is already protected by requeststate")
    sdk = [index for index, entry in enumerate(chain) if isinstance(entry, RequestStateBoundary)]
    if sdk:
        # MCPServer always installs one: take its place, so the order the SDK
        # documents (telemetry outside, user middleware inside) still holds.
        position = sdk[0]
        chain[:] = [entry for entry in chain if not isinstance(entry, RequestStateBoundary)]
    else:
        # The low-level Server has none: go right after the SDK's own built-ins
        # (OpenTelemetry), which is where MCPServer puts its boundary.
        position = 0
        while position < len(chain) and type(chain[position]).__module__.startswith("mcp."):
            position += 1
    chain.insert(position, boundary)


class _Sealing:
    """What both shapes mint and verify with: keys, modes, ttl, size limit, clock."""

    def __init__(
        self,
        keys: Keys,
        mode: rs.Modes,
        ttl: int,
        leeway: int,
        max_token_bytes: int,
        clock: Callable[[], float] | None,
    ) -> None:
        # Validated once, by the codec every token goes through.
        self._codec = rs.Codec(keys, mode=mode, ttl=ttl, leeway=leeway, max_token_bytes=max_token_bytes)
        self._keys = self._codec.keys
        self._modes = self._codec.modes
        self._ttl = ttl
        self._leeway = leeway
        self._max_token_bytes = max_token_bytes
        self._clock = clock

    @property
    def keys(self) -> rs.KeyRing:
        """The key ring tokens are minted and verified with."""
        return self._keys

    def _now(self) -> int | None:
        return None if self._clock is None else int(self._clock())

    def _describe(self) -> str:
        modes = ",".join(m.value for m in self._modes)
        return f"keys={self._keys!r}, mode={modes}, ttl={self._ttl}"


class Boundary(_Sealing):
    """Server middleware that seals and opens ``requestState`` with requeststate tokens.

    Acts on ``tools/call``, ``prompts/get`` and ``resources/read`` only. An
    echoed ``requestState`` is verified before any handler runs and replaced
    by the plaintext the server minted; an ``input_required`` result's
    ``requestState`` is sealed on the way out. Failures are closed both ways:
    a refused echo never reaches a handler, and a state that cannot be sealed
    (a failing subject source, an oversized state) answers -32603 instead of
    leaving the server unsealed.

    Usually installed with ``protect``; constructing one is for custom chains.

    Args:
        keys: a ``KeyRing`` shared by every worker, or one raw secret.
        mode: ``"encrypted"`` (default: the client can neither read nor change
            the state), ``"signed"`` (readable), another ``Mode``, or a tuple
            while migrating (the first mints, all are accepted).
        ttl: seconds a token lives (default 300).
        on_invalid: ``"error"`` (default) answers the frozen -32602; ``"reelicit"``
            drops ``requestState`` and ``inputResponses``, so the handler sees a
            first round and asks again.
        bind: ``"subject_and_tool"`` (default), ``"subject"`` or ``"none"``.
        subject: reads the authenticated subject from the request context (by
            default the SDK's ``authenticated_principal``); ``None`` means
            unauthenticated, bound as the empty subject.
        guard: a ``requeststate`` ``Guard`` or ``AsyncGuard`` that makes every
            token single-use.
        leeway: seconds of clock skew tolerated after expiry.
        max_token_bytes: refuse a longer echo before decoding it.
        clock: unix time source; the system clock when ``None`` (tests inject one).
    """

    def __init__(
        self,
        keys: Keys,
        /,
        *,
        mode: rs.Modes = rs.Mode.ENCRYPTED,
        ttl: int = rs.DEFAULT_TTL,
        on_invalid: OnInvalid = "error",
        bind: Binding = "subject_and_tool",
        subject: SubjectSource = authenticated_principal,
        guard: rs.Guard | rs.AsyncGuard | None = None,
        leeway: int = 0,
        max_token_bytes: int = rs.DEFAULT_MAX_TOKEN_BYTES,
        clock: Callable[[], float] | None = None,
    ) -> None:
        if on_invalid not in _ON_INVALID:
            raise ValueError(f"on_invalid must be one of {_ON_INVALID}, got {on_invalid!r}")
        if bind not in _BINDINGS:
            raise ValueError(f"bind must be one of {_BINDINGS}, got {bind!r}")
        if not callable(subject):
            raise TypeError("subject must be a callable taking the request context")
        super().__init__(keys, mode, ttl, leeway, max_token_bytes, clock)
        self._on_invalid = on_invalid
        self._bind = bind
        self._subject = subject
        self._guard = guard
        self._warned_http = False

    def __repr__(self) -> str:
        return f"Boundary({self._describe()}, on_invalid={self._on_invalid})"

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Open the echoed state, run the handler, seal the state it hands out."""
        if ctx.method not in INPUT_REQUIRED_METHODS:
            return await call_next(ctx)
        self._note_transport(ctx)
        identity: tuple[str, str | None] | None = None
        params = ctx.params
        if params is not None and params.get("requestState") is not None:
            # JSON null counts as absent, as in the SDK: dropping the field is in any client's power.
            state, identity = await self._open(ctx, params)
            if state is None:
                dropped = {k: v for k, v in params.items() if k not in ("requestState", "inputResponses")}
                ctx = replace(ctx, params=dropped)
            else:
                ctx = replace(ctx, params={**params, "requestState": state})
        result = await call_next(ctx)
        return self._seal_result(ctx, result, identity)

    def _note_transport(self, ctx: ServerRequestContext[Any, Any]) -> None:
        # The SDK has no startup hook that names the transport; ctx.request is
        # the Starlette request on HTTP and None on stdio or in memory.
        if self._keys.is_ephemeral and not self._warned_http and ctx.request is not None:
            self._warned_http = True
            logger.warning(
                "requestState keys are ephemeral (KeyRing %s) on an HTTP transport: a retry that "
                "reaches another worker or replica, or arrives after a restart, is refused. Share "
                "one KeyRing between all workers (KeyRing.from_env() or a secret store).",
                self._keys.fingerprint,
            )

    def _identity(self, ctx: ServerRequestContext[Any, Any]) -> tuple[str, str | None]:
        subject = ""
        if self._bind != "none":
            value = self._subject(ctx)
            if value is not None and not isinstance(value, str):
                raise TypeError(f"subject source returned {type(value).__name__}, expected str or None")
            subject = value or ""
        tool = request_target(ctx.method, ctx.params) if self._bind == "subject_and_tool" else None
        return subject, tool

    async def _open(
        self, ctx: ServerRequestContext[Any, Any], params: Mapping[str, Any]
    ) -> tuple[str | None, tuple[str, str | None] | None]:
        try:
            identity = self._identity(ctx)
        except Exception:  # deny on error: a failing subject source or binding refuses the echo
            logger.exception("requestState binding failed on %s", ctx.method)
            self._refuse(ctx.method, "binding_error")
            return None, None
        subject, tool = identity
        try:
            state = await rs.averify(
                params["requestState"],
                self._keys,
                mode=self._modes,
                subject=subject,
                tool=tool,
                leeway=self._leeway,
                now=self._now(),
                max_token_bytes=self._max_token_bytes,
                guard=self._guard,
            )
        except rs.InvalidToken as refused:
            self._refuse(ctx.method, refused.reason.value)
            return None, identity
        return state, identity

    def _refuse(self, method: str, reason: str) -> None:
        # The reason goes to the server log only; the wire gets the frozen shape.
        # Returns only under on_invalid="reelicit", where the caller drops the state.
        logger.warning("requestState refused on %s: %s", method, reason)
        if self._on_invalid == "error":
            raise MCPError(code=INVALID_PARAMS, message=INVALID_MESSAGE, data=dict(_INVALID_DATA))

    def _seal_result(
        self,
        ctx: ServerRequestContext[Any, Any],
        result: HandlerResult,
        identity: tuple[str, str | None] | None,
    ) -> HandlerResult:
        if not is_input_required(result):
            return result
        state = result.get("requestState") if isinstance(result, Mapping) else result.request_state
        if state is None:
            return result
        try:
            if not isinstance(state, str):
                raise TypeError(f"requestState must be a str, not {type(state).__name__}")
            subject, tool = identity if identity is not None else self._identity(ctx)
            token = rs.encode(
                state,
                self._keys,
                mode=self._modes[0],
                subject=subject,
                tool=tool,
                ttl=self._ttl,
                now=self._now(),
                max_token_bytes=self._max_token_bytes,
            )
        except Exception:  # deny on error: never let an unsealed state reach the wire
            logger.exception("refusing to seal requestState on %s", ctx.method)
            raise MCPError(code=INTERNAL_ERROR, message="Internal error") from None
        if isinstance(result, Mapping):
            return {**result, "requestState": token}
        return result.model_copy(update={"request_state": token})


def protect(
    server: MCPServer[Any] | Server[Any],
    keys: Keys,
    /,
    *,
    mode: rs.Modes = rs.Mode.ENCRYPTED,
    ttl: int = rs.DEFAULT_TTL,
    on_invalid: OnInvalid = "error",
    bind: Binding = "subject_and_tool",
    subject: SubjectSource = authenticated_principal,
    guard: rs.Guard | rs.AsyncGuard | None = None,
    leeway: int = 0,
) -> Boundary:
    """Protect every ``requestState`` of ``server`` with a requeststate ``Boundary``; return it.

    Works on an ``MCPServer`` (the SDK's ``RequestStateBoundary`` is replaced
    at its position in ``server.middleware``) and on the low-level ``Server``
    (which has none: the boundary goes right after the SDK's telemetry
    middleware). Middleware you add later with ``append`` runs inside it and
    sees plaintext. Arguments are those of ``Boundary``.

    Logs a warning when ``keys`` is ephemeral, and again on the first request
    that arrives over HTTP: ephemeral keys break every retry across workers.

    Raises:
        TypeError, ValueError: a bad argument, or ``server`` already protected.
    """
    boundary = Boundary(
        keys,
        mode=mode,
        ttl=ttl,
        on_invalid=on_invalid,
        bind=bind,
        subject=subject,
        guard=guard,
        leeway=leeway,
    )
    _install(server, boundary)
    _warn_if_ephemeral(boundary.keys)
    return boundary


class SDKCodec(_Sealing):
    """Our token formats as a ``RequestStateCodec`` for the SDK's own ``RequestStateBoundary``.

    ``seal`` wraps the SDK's claims envelope in a requeststate token with no
    subject or tool binding (the SDK's boundary binds method, target,
    arguments, audience and principal itself) and a lifetime of ``ttl``;
    ``unseal`` verifies it and turns every refusal into the SDK's
    ``InvalidRequestState``, whose message is a log-only reason code.

    ``mode="signed"`` leaves the whole envelope, state included, readable by
    the client: prefer the default ``"encrypted"``. ``guard`` (a synchronous
    ``Guard``: the SDK's codec seam is synchronous) makes tokens single-use.
    """

    def __init__(
        self,
        keys: Keys,
        /,
        *,
        mode: rs.Modes = rs.Mode.ENCRYPTED,
        ttl: int = rs.DEFAULT_TTL,
        guard: rs.Guard | None = None,
        max_token_bytes: int = rs.DEFAULT_MAX_TOKEN_BYTES,
        clock: Callable[[], float] | None = None,
    ) -> None:
        super().__init__(keys, mode, ttl, 0, max_token_bytes, clock)
        self._guard = guard

    def __repr__(self) -> str:
        return f"SDKCodec({self._describe()})"

    def seal(self, payload: bytes) -> str:
        """Mint a token carrying the SDK's envelope (compact ASCII JSON) as its state."""
        return rs.encode(
            payload.decode("utf-8"),
            self._keys,
            mode=self._modes[0],
            ttl=self._ttl,
            now=self._now(),
            max_token_bytes=self._max_token_bytes,
        )

    def unseal(self, token: str) -> bytes:
        """Return the envelope a token carries, or raise ``InvalidRequestState`` (reason code only)."""
        try:
            state = rs.verify(
                token,
                self._keys,
                mode=self._modes,
                now=self._now(),
                max_token_bytes=self._max_token_bytes,
                guard=self._guard,
            )
        except rs.InvalidToken as refused:
            raise InvalidRequestState(refused.reason.value) from None
        return state.encode("utf-8")


def sdk_security(
    keys: Keys,
    /,
    *,
    mode: rs.Modes = rs.Mode.ENCRYPTED,
    ttl: int = rs.DEFAULT_TTL,
    audience: str | None = None,
    subject: SubjectSource | None = authenticated_principal,
    guard: rs.Guard | None = None,
) -> RequestStateSecurity:
    """The SDK's ``RequestStateSecurity`` policy with ``SDKCodec`` as its codec.

    One line on an ``MCPServer``: ``MCPServer("name", request_state_security=sdk_security(keys))``.
    ``ttl`` is both the SDK's envelope lifetime and our token's. ``subject`` is
    the SDK's ``bind_principal`` (``None`` disables principal binding).
    """
    codec = SDKCodec(keys, mode=mode, ttl=ttl, guard=guard)
    _warn_if_ephemeral(codec.keys)
    return RequestStateSecurity(codec=codec, ttl=float(ttl), bind_principal=subject, audience=audience)


def use_codec(
    server: MCPServer[Any] | Server[Any],
    keys: Keys,
    /,
    *,
    mode: rs.Modes = rs.Mode.ENCRYPTED,
    ttl: int = rs.DEFAULT_TTL,
    audience: str | None = None,
    subject: SubjectSource | None = authenticated_principal,
    guard: rs.Guard | None = None,
) -> RequestStateBoundary:
    """Install the SDK's ``RequestStateBoundary`` with ``SDKCodec`` on ``server``; return it.

    On an ``MCPServer`` it replaces the boundary the SDK installed; on the
    low-level ``Server`` it adds the one the SDK leaves out. The audience
    defaults to the server's name. Refusals answer -32602 (the SDK's boundary
    has no re-elicit option).
    """
    _chain(server)  # type check before any side effect
    security = sdk_security(keys, mode=mode, ttl=ttl, audience=audience, subject=subject, guard=guard)
    boundary = RequestStateBoundary(security, default_audience=server.name)
    _install(server, boundary)
    return boundary
