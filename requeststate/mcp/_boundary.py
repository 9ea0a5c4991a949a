"""``Boundary``: our server middleware that seals and opens ``requestState``; ``protect`` installs it."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Final, Literal, TypeAlias, Unpack, cast

import anyio.to_thread
from mcp.server import MCPServer, Server
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.request_state import authenticated_principal
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS
from mcp_types.methods import INPUT_REQUIRED_METHODS, is_input_required

import requeststate as rs

from ._binding import BINDINGS, Binding, access_token_subject, boundary_tool, mcpd_tool
from ._install import install, warn_if_ephemeral

logger = logging.getLogger("requeststate.mcp")

INVALID_MESSAGE: Final = "Invalid or expired requestState"
"""The SDK's frozen wire message for a refused echo; the reason stays in the server log."""
_INVALID_DATA: Final = {"reason": "invalid_request_state"}
_ROUND_FIELDS: Final = ("requestState", "inputResponses")
_LOGGED_TARGET_CHARS: Final = 200

OnInvalid: TypeAlias = Literal["error", "reelicit"]
"""What a refused echo gets: the frozen -32602 error (default), or no state (the handler asks again)."""
SubjectSource: TypeAlias = Callable[[ServerRequestContext[Any, Any]], "str | None"]
"""Reads the authenticated principal from the SDK's auth context; ``None`` when unauthenticated."""
_ON_INVALID: Final = ("error", "reelicit")


class Options(rs.CodecOptions, total=False):
    """The options of ``Boundary`` and ``protect``: the codec's own (``requeststate.CodecOptions``) and these.

    Every option is checked when the boundary is built; none is read per request.
    """

    mode: rs.Modes
    """``"encrypted"`` (default), ``"signed"``, ``"xchacha"``, or a tuple while migrating (first mints)."""
    on_invalid: OnInvalid
    """``"error"`` (default): the frozen -32602; ``"reelicit"``: drop the state, the handler asks again."""
    bind: Binding
    """``"request"`` (default), ``"target"`` or ``"mcpd"``: see ``requeststate.mcp.Binding``."""
    subject: SubjectSource | None
    """The principal source; ``None`` binds no principal. Default: the SDK's
    ``authenticated_principal`` (client, issuer, subject), or the bare ``sub``
    under ``bind="mcpd"``."""
    audience: str | None
    """The service identity bound into every token; ``None`` opts out. ``protect``
    defaults it to the server's name; ``bind="mcpd"`` binds none."""


class _OffLoop:
    """A synchronous guard's claim run in a worker thread: a slow store never stalls the event loop."""

    def __init__(self, guard: rs.Guard) -> None:
        self._guard = guard

    async def claim(self, token_id: str, expires_at: int, now: int, /) -> bool:
        return await anyio.to_thread.run_sync(self._guard.claim, token_id, expires_at, now)


def _for_the_loop(guard: rs.Guard | rs.AsyncGuard | None) -> rs.Guard | rs.AsyncGuard | None:
    # A well-formed sync guard that may wait on I/O goes off the loop. MemoryGuard
    # takes one uncontended lock and never waits: it runs inline. Anything else
    # (None, an async guard, or no guard at all such as a class) goes to the
    # Codec as given, which accepts or refuses it.
    claim = getattr(guard, "claim", None)
    if (
        inspect.isclass(guard)
        or not callable(claim)
        or inspect.iscoroutinefunction(claim)
        or isinstance(guard, rs.MemoryGuard)
    ):
        return guard
    return _OffLoop(guard)  # type: ignore[arg-type]


def _without_round(params: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in params.items() if key not in _ROUND_FIELDS}


def _logged_id(ctx: ServerRequestContext[Any, Any]) -> str:
    # The client chose it too: a 1 MB id would be a 1 MB log line per request.
    return repr(ctx.request_id)[:_LOGGED_TARGET_CHARS]


def _logged_target(ctx: ServerRequestContext[Any, Any]) -> str | None:
    # The client chose it: truncated, and logged with %r so it cannot forge log lines.
    field = "uri" if ctx.method == "resources/read" else "name"
    value = (ctx.params or {}).get(field)
    return value[:_LOGGED_TARGET_CHARS] if isinstance(value, str) else None


class Boundary:
    """Server middleware that seals and opens ``requestState`` with requeststate tokens.

    Acts on ``tools/call``, ``prompts/get`` and ``resources/read`` requests. An
    echoed ``requestState`` is verified before any handler runs and replaced by
    the plaintext the server minted; an ``input_required`` result's
    ``requestState`` is sealed on the way out. Under the default binding a
    token is bound to the method, the target, a digest of the arguments, the
    audience and the principal: everything the SDK's own boundary binds. A
    replay guard is claimed only after all of those passed, so a misbound echo
    never burns a token. Failures are closed both ways: a refused echo never
    reaches a handler (-32602, or a re-elicit), and a state that cannot be
    sealed answers -32603 rather than leave the server unsealed. A JSON-RPC
    notification never redeems a state: its ``requestState`` is dropped.

    Usually installed with ``protect``, which sets ``audience`` to the server's
    name. Built directly, ``audience=`` is required unless ``bind="mcpd"``.

    Args:
        keys: a ``KeyRing`` shared by every worker, or one raw secret.
        **options: see ``Options``.

    Raises:
        TypeError, ValueError: a bad option (all are checked here).
    """

    def __init__(self, keys: rs.Keys, /, **options: Unpack[Options]) -> None:
        on_invalid = options.pop("on_invalid", "error")
        if on_invalid not in _ON_INVALID:
            raise ValueError(f"on_invalid must be one of {_ON_INVALID}, got {on_invalid!r}")
        bind = options.pop("bind", "request")
        if bind not in BINDINGS:
            raise ValueError(f"bind must be one of {BINDINGS}, got {bind!r}")
        default_subject = access_token_subject if bind == "mcpd" else authenticated_principal
        subject = options.pop("subject", default_subject)
        if subject is not None and not callable(subject):
            raise TypeError("subject must be a callable taking the request context, or None")
        if bind != "mcpd" and "audience" not in options:
            raise TypeError("Boundary needs audience=: the server's name (protect() passes it), or None")
        audience = options.pop("audience", None)
        if bind == "mcpd" and audience is not None:
            raise ValueError("bind='mcpd' binds no audience (mcp.d does not): leave audience unset")
        if audience is not None and not isinstance(audience, str):
            raise TypeError(f"audience must be a str or None, not {type(audience).__name__}")
        mode = options.pop("mode", rs.Mode.ENCRYPTED)
        if "guard" in options:
            options["guard"] = _for_the_loop(options["guard"])
        # What is left are the codec's own options, which Codec checks by name and value.
        self._codec = rs.Codec(keys, mode=mode, **cast("rs.CodecOptions", options))
        self._on_invalid = on_invalid
        self._bind = bind
        self._subject = subject
        self._audience = audience
        self._warned_http = False

    @property
    def keys(self) -> rs.KeyRing:
        """The key ring tokens are minted and verified with."""
        return self._codec.keys

    def __repr__(self) -> str:
        modes = ",".join(m.value for m in self._codec.modes)
        return (
            f"Boundary(keys={self._codec.keys!r}, mode={modes}, ttl={self._codec.ttl}, "
            f"bind={self._bind}, audience={self._audience!r}, on_invalid={self._on_invalid})"
        )

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Open the echoed state, run the handler, seal the state it hands out."""
        if ctx.method not in INPUT_REQUIRED_METHODS:
            return await call_next(ctx)
        params = ctx.params
        if ctx.request_id is None:
            # A notification: nobody reads an answer, so it never redeems a state
            # (nor claims an id, nor raises). Its round fields never go further.
            if params is not None and any(key in params for key in _ROUND_FIELDS):
                ctx = replace(ctx, params=_without_round(params))
            return await call_next(ctx)
        self._note_transport(ctx)
        identity: tuple[str, str] | None = None
        if params is not None and params.get("requestState") is not None:
            # JSON null counts as absent, as in the SDK: dropping the field is in any client's power.
            state, identity = await self._open(ctx, params)
            if state is None:
                ctx = replace(ctx, params=_without_round(params))
            else:
                ctx = replace(ctx, params={**params, "requestState": state})
        result = await call_next(ctx)
        return self._seal_result(ctx, result, identity)

    def _note_transport(self, ctx: ServerRequestContext[Any, Any]) -> None:
        # The SDK has no startup hook that names the transport; ctx.request is
        # the Starlette request on HTTP and None on stdio or in memory.
        if self.keys.is_ephemeral and not self._warned_http and ctx.request is not None:
            self._warned_http = True
            logger.warning(
                "requestState keys are ephemeral (KeyRing %s) on an HTTP transport: a retry that "
                "reaches another worker or replica, or arrives after a restart, is refused. Share "
                "one KeyRing between all workers (KeyRing.from_env() or a secret store).",
                self.keys.fingerprint,
            )

    def _identity(self, ctx: ServerRequestContext[Any, Any]) -> tuple[str, str]:
        """The (subject, tool) this request's tokens are bound to (docs/wire-format.md, "MCP bindings")."""
        principal = None if self._subject is None else self._subject(ctx)
        if principal is not None and not isinstance(principal, str):
            raise TypeError(f"subject source returned {type(principal).__name__}, expected str or None")
        if self._bind == "mcpd":
            return principal or "", mcpd_tool(ctx.method, ctx.params)
        tool = boundary_tool(
            ctx.method,
            ctx.params,
            arguments=self._bind == "request",
            audience=self._audience,
            principal=principal is not None,
        )
        return principal or "", tool

    async def _open(
        self, ctx: ServerRequestContext[Any, Any], params: Mapping[str, Any]
    ) -> tuple[str | None, tuple[str, str] | None]:
        try:
            identity = self._identity(ctx)
        except Exception:  # deny on error: a failing subject source or a target-less request refuses
            self._refuse(ctx, "binding_error", exc_info=True)
            return None, None
        subject, tool = identity
        try:
            state: str = await self._codec.averify(params["requestState"], subject=subject, tool=tool)
        except rs.InvalidToken as refused:
            self._refuse(ctx, refused.reason.value)
            return None, identity
        return state, identity

    def _refuse(self, ctx: ServerRequestContext[Any, Any], reason: str, *, exc_info: bool = False) -> None:
        # One log line per refusal, for the operator; the wire gets the frozen shape.
        # Returns only under on_invalid="reelicit", where the caller drops the state.
        logger.warning(
            "requestState refused: method=%s target=%r id=%s reason=%s",
            ctx.method,
            _logged_target(ctx),
            _logged_id(ctx),
            reason,
            exc_info=exc_info,
        )
        if self._on_invalid == "error":
            raise MCPError(code=INVALID_PARAMS, message=INVALID_MESSAGE, data=dict(_INVALID_DATA))

    def _seal_result(
        self,
        ctx: ServerRequestContext[Any, Any],
        result: HandlerResult,
        identity: tuple[str, str] | None,
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
            token = self._codec.encode(state, subject=subject, tool=tool)
        except Exception:  # deny on error: never let an unsealed state reach the wire
            logger.exception(
                "refusing to seal requestState: method=%s target=%r id=%s",
                ctx.method,
                _logged_target(ctx),
                _logged_id(ctx),
            )
            raise MCPError(code=INTERNAL_ERROR, message="Internal error") from None
        if isinstance(result, Mapping):
            return {**result, "requestState": token}
        return result.model_copy(update={"request_state": token})


def protect(server: MCPServer[Any] | Server[Any], keys: rs.Keys, /, **options: Unpack[Options]) -> Boundary:
    """Protect every ``requestState`` of ``server`` with a requeststate ``Boundary``; return it.

    Works on an ``MCPServer`` (the SDK's ``RequestStateBoundary`` is replaced
    at its position in ``server.middleware``) and on the low-level ``Server``
    (which has none: the boundary goes right after the SDK's telemetry
    middleware). Middleware you add later with ``append`` runs inside it and
    sees plaintext. ``audience`` defaults to ``server.name`` (as the SDK's
    boundary does), except under ``bind="mcpd"``. Options: see ``Options``.

    Logs a warning when ``keys`` is ephemeral, and again on the first request
    that arrives over HTTP: ephemeral keys break every retry across workers.

    Raises:
        TypeError, ValueError: a bad option, or ``server`` already protected.
    """
    if options.get("bind", "request") != "mcpd" and "audience" not in options:
        options["audience"] = getattr(server, "name", None)
    boundary = Boundary(keys, **options)
    install(server, boundary, Boundary)
    warn_if_ephemeral(boundary.keys)
    return boundary
