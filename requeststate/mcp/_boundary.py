"""``Boundary``: our server middleware that seals and opens ``requestState``; ``protect`` installs it."""

from __future__ import annotations

import inspect
import logging
import os
import time
from collections.abc import Mapping
from typing import Any, Final, Unpack

import anyio
import anyio.to_thread
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, InputRequiredResult
from mcp_types.methods import INPUT_REQUIRED_METHODS

import requeststate as rs
from requeststate._seam import Counts

from ._binding import boundary_tool, mcpd_tool
from ._config import BoundaryOptions, settings
from ._install import AnyServer, install, start_with, warn_if_ephemeral
from ._once import answer_of_error, answer_of_result, replayed, request_of

logger = logging.getLogger("requeststate.mcp")

INVALID_MESSAGE: Final = "Invalid or expired requestState"
"""The SDK's frozen wire message for a refused echo; the reason stays in the server log."""
_INVALID_DATA: Final = {"reason": "invalid_request_state"}
UNCHECKED_MESSAGE: Final = "requestState could not be checked (the replay guard did not answer): retry"
"""The message of -32603 for an echo the guard could not check: an outage, not a forgery."""
_UNCHECKED_DATA: Final = {"reason": "request_state_unchecked"}
IN_PROGRESS_MESSAGE: Final = "requestState is being redeemed by an earlier identical call: retry"
"""The message of -32603 for an exactly-once retry while the first call runs: its answer comes later."""
_ANSWER_UNAVAILABLE: Final = {
    rs.Reason.OUTCOME_UNKNOWN: (
        "requestState was redeemed by an earlier call that did not answer: its outcome is unknown"
    ),
    rs.Reason.ANSWER_TOO_LARGE: (
        "requestState was redeemed by an earlier call whose answer was too large to keep"
    ),
}
"""The messages of -32602 for an exactly-once retry whose first answer is not kept: never re-elicited."""
_ROUND_FIELDS: Final = ("requestState", "inputResponses")
_LOGGED_TARGET_CHARS: Final = 200


def _runnable(params: Mapping[str, Any]) -> bool:
    """Whether the SDK will run a request of these params: ``arguments``, if present, an object.

    ``[]``, ``0``, ``false`` and ``""`` digest as ``{}``, as in the SDK, which then refuses them.
    """
    arguments = params.get("arguments")
    return arguments is None or isinstance(arguments, Mapping)


def _with_params(
    ctx: ServerRequestContext[Any, Any], params: dict[str, Any]
) -> ServerRequestContext[Any, Any]:
    # What dataclasses.replace(ctx, params=params) makes of the SDK's context, a
    # plain dataclass (no __post_init__, no slots): a shallow copy, as copy.copy
    # makes it, without running __init__ again (docs/performance.md, "MCP rounds").
    copied: ServerRequestContext[Any, Any] = object.__new__(type(ctx))
    copied.__dict__.update(vars(ctx))
    copied.params = params
    return copied


def _without_round(params: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in params.items() if key not in _ROUND_FIELDS}


def _logged_id(ctx: ServerRequestContext[Any, Any]) -> str:
    # The client chose it too: a 1 MB id would be a 1 MB log line per request.
    return repr(ctx.request_id)[:_LOGGED_TARGET_CHARS]


def _target(ctx: ServerRequestContext[Any, Any]) -> object:
    """The target a request names (``params.uri`` for ``resources/read``, else ``params.name``), as sent."""
    return (ctx.params or {}).get("uri" if ctx.method == "resources/read" else "name")


def _logged_target(ctx: ServerRequestContext[Any, Any]) -> str | None:
    # The client chose it: truncated, and logged with %r so it cannot forge log lines.
    value = _target(ctx)
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

    Counts what it mints, accepts and refuses on OpenTelemetry (docs/metrics.md),
    with the request's ``method`` added, on the ``metrics`` option's meter (by
    default the global provider's, when ``opentelemetry-api`` is installed).

    Args:
        keys: a ``requeststate.Codec`` (such as ``Codec.from_env()``), whose keys,
            modes, ttl, leeway, max_token_bytes, guard and clock are used; or a
            ``KeyRing`` shared by every worker, or one raw secret.
        **options: see ``BoundaryOptions``.

    Raises:
        TypeError, ValueError: a bad option (all are checked here).
    """

    def __init__(self, keys: rs.Keys | rs.Codec, /, **options: Unpack[BoundaryOptions]) -> None:
        config = settings(keys, options)
        self._codec: Final = config.codec
        self._on_invalid: Final = config.on_invalid
        self._bind: Final = config.bind
        self._subject: Final = config.subject
        self._audience: Final = config.audience
        self._counts: Final = config.counts
        self._claims: Final = config.codec.guard is not None
        self._guard: Final = config.guard
        self._exactly_once: Final = config.exactly_once
        # Until the first request over HTTP, which warns once.
        self._warn_http = config.codec.keys.is_ephemeral

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

    async def begin(self) -> None:
        """Begin the replay guard, and return once the tokens this boundary mints are accepted.

        ``protect`` runs it each time the server starts serving, before its first request:
        it calls the guard's ``begin()`` (awaited, or in a worker thread) and sleeps until
        the first second it returns, logging one line, naming this process, that says how
        long: up to the guard's ``clock_skew + 1`` seconds on a new or forgetful store (a
        WARNING: the server holds off serving, and tokens minted before the store's memory
        began are refused), none on a store in use (INFO). A guard without ``begin`` (or no
        guard) has nothing to wait for.

        Raises:
            GuardUnavailable: the guard could not begin (its store did not answer), with
                the store's own error in the message: the server does not start.
        """
        begin = getattr(self._guard, "begin", None)
        if not callable(begin):
            return
        try:
            if inspect.iscoroutinefunction(begin):
                ready = await begin()
            else:  # a sync store's I/O, off the event loop
                ready = await anyio.to_thread.run_sync(begin)
        except rs.GuardUnavailable as error:
            # The store's own words (Redis's address, never a password) and no private module:
            # this is what a server that cannot start prints.
            cause = "" if error.__cause__ is None else f": {error.__cause__}"
            raise rs.GuardUnavailable(
                f"the replay guard did not begin, so the server does not start: {error}{cause}"
            ) from None
        wait = max(0.0, ready - time.time())
        # A wait is a WARNING so that it shows where only Python's last-resort handler does (uvicorn
        # configures its own loggers alone): a start that pauses must say why (docs/deployment.md).
        logger.log(
            logging.WARNING if wait else logging.INFO,
            "requestState guard %s began in process %d: the tokens this server mints are accepted %s",
            type(self._guard).__name__,
            os.getpid(),
            f"in {wait:.1f} s, when it serves" if wait else "at once",
        )
        await anyio.sleep(wait)

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Open the echoed state, run the handler, seal the state it hands out."""
        if ctx.method not in INPUT_REQUIRED_METHODS:
            return await call_next(ctx)
        params = ctx.params
        if ctx.request_id is None:
            # A notification: nobody reads an answer, so it never redeems a state
            # (nor claims an id, nor raises). Its round fields never go further.
            if params is not None and any(key in params for key in _ROUND_FIELDS):
                ctx = _with_params(ctx, _without_round(params))
            return await call_next(ctx)
        if self._warn_http and ctx.request is not None:
            # The SDK has no startup hook that names the transport; ctx.request is
            # the Starlette request on HTTP and None on stdio or in memory.
            self._warn_ephemeral_on_http()
        counts = self._counts.get(ctx.method)
        identity: tuple[str, str] | None = None
        if params is not None and params.get("requestState") is not None:
            if not _runnable(params):
                # The SDK refuses this request (-32602) after the boundary: redeeming its state first
                # would burn the token of a request that never runs. It goes on without its rounds.
                return await call_next(_with_params(ctx, _without_round(params)))
            # JSON null counts as absent, as in the SDK: dropping the field is in any client's power.
            if self._exactly_once and (ctx.method, _target(ctx)) in self._exactly_once:
                return await self._once(ctx, params, counts, call_next)
            state, identity = await self._open(ctx, params, counts)
            if state is None:
                ctx = _with_params(ctx, _without_round(params))
            else:
                ctx = _with_params(ctx, {**params, "requestState": state})
        result = await call_next(ctx)
        return self._seal_result(ctx, result, identity, counts)

    def _warn_ephemeral_on_http(self) -> None:
        self._warn_http = False
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

    def _bound(self, ctx: ServerRequestContext[Any, Any], counts: Counts | None) -> tuple[str, str] | None:
        """The identity an echo is checked for; ``None`` once refused (or raised) when it cannot be had."""
        try:
            return self._identity(ctx)
        except Exception:  # deny on error: a failing subject source or a target-less request refuses
            # Counted as the core counts an identity it cannot bind: wrong_binding.
            self._refuse(ctx, "binding_error", rs.Reason.WRONG_BINDING, counts, exc_info=True)
            return None

    async def _open(
        self, ctx: ServerRequestContext[Any, Any], params: Mapping[str, Any], counts: Counts | None
    ) -> tuple[str | None, tuple[str, str] | None]:
        identity = self._bound(ctx, counts)
        if identity is None:
            return None, None
        subject, tool = identity
        token = params["requestState"]
        try:
            opened: rs.Claims[str] = await self._codec.aopen(token, subject=subject, tool=tool)
        except rs.InvalidToken as refused:
            self._refuse(ctx, refused.reason.value, refused.reason, counts)
            return None, identity
        if counts is not None:
            counts.accepted(opened.mode, self._claims)
        return opened.state, identity

    async def _once(
        self,
        ctx: ServerRequestContext[Any, Any],
        params: Mapping[str, Any],
        counts: Counts | None,
        call_next: CallNext,
    ) -> HandlerResult:
        """An exactly-once target's round: its first call runs the handler and keeps the answer; an
        identical retry gets that answer, and nothing runs (docs/exactly-once.md)."""
        identity = self._bound(ctx, counts)
        if identity is None:
            return await self._without_state(ctx, params, None, counts, call_next)
        subject, tool = identity
        try:
            redemption = await self._codec.aredeem(
                params["requestState"],
                request=request_of(ctx.method, params, subject),
                subject=subject,
                tool=tool,
            )
        except rs.InvalidToken as refused:
            self._refuse(ctx, refused.reason.value, refused.reason, counts)
            return await self._without_state(ctx, params, identity, counts, call_next)
        if counts is not None:
            counts.accepted(redemption.claims.mode, True)
        if redemption.answer is not None:
            return replayed(redemption.answer)
        ctx = _with_params(ctx, {**params, "requestState": redemption.state})
        try:
            result = self._seal_result(ctx, await call_next(ctx), identity, counts)
        except MCPError as error:
            await self._keep(ctx, redemption, answer_of_error(error))
            raise
        await self._keep(ctx, redemption, answer_of_result(result))
        return result

    async def _without_state(
        self,
        ctx: ServerRequestContext[Any, Any],
        params: Mapping[str, Any],
        identity: tuple[str, str] | None,
        counts: Counts | None,
        call_next: CallNext,
    ) -> HandlerResult:
        """A round whose state was refused, under ``on_invalid="reelicit"``: the handler asks again."""
        ctx = _with_params(ctx, _without_round(params))
        return self._seal_result(ctx, await call_next(ctx), identity, counts)

    async def _keep(
        self, ctx: ServerRequestContext[Any, Any], redemption: rs.Redemption[Any], answer: str
    ) -> None:
        if not await self._codec.akeep(redemption, answer):
            logger.warning(
                "requestState answer not kept (the replay guard did not answer): method=%s target=%r id=%s "
                "pid=%d: its retries are told it is in progress, then that its outcome is unknown",
                ctx.method,
                _logged_target(ctx),
                _logged_id(ctx),
                os.getpid(),
            )

    def _refuse(
        self,
        ctx: ServerRequestContext[Any, Any],
        logged: str,
        reason: rs.Reason,
        counts: Counts | None,
        *,
        exc_info: bool = False,
    ) -> None:
        # One count and one log line per refusal, for the operator; the wire gets the frozen shape.
        # Returns only under on_invalid="reelicit", where the caller drops the state; an echo the
        # guard could not check answers -32603 under either.
        if counts is not None:
            counts.refused(reason)
        logger.warning(
            "requestState refused: method=%s target=%r id=%s reason=%s pid=%d",
            ctx.method,
            _logged_target(ctx),
            _logged_id(ctx),
            logged,
            os.getpid(),  # the worker that refused, in the message: a bare handler prints no more
            exc_info=exc_info,
        )
        if reason is rs.Reason.GUARD_UNAVAILABLE:
            # An outage is not a forgery: the client may retry this very request, and re-eliciting
            # would ask the user again for an answer the state already holds.
            raise MCPError(code=INTERNAL_ERROR, message=UNCHECKED_MESSAGE, data=dict(_UNCHECKED_DATA))
        if reason is rs.Reason.IN_PROGRESS:
            # The first call runs: this very request, retried, gets its answer.
            raise MCPError(
                code=INTERNAL_ERROR, message=IN_PROGRESS_MESSAGE, data={"reason": "request_state_in_progress"}
            )
        if reason in _ANSWER_UNAVAILABLE:
            # The action ran (or may have): asking the user again would run it twice.
            raise MCPError(
                code=INVALID_PARAMS,
                message=_ANSWER_UNAVAILABLE[reason],
                data={"reason": f"request_state_{reason.value}"},
            )
        if self._on_invalid == "error":
            raise MCPError(code=INVALID_PARAMS, message=INVALID_MESSAGE, data=dict(_INVALID_DATA))

    def _seal_result(
        self,
        ctx: ServerRequestContext[Any, Any],
        result: HandlerResult,
        identity: tuple[str, str] | None,
        counts: Counts | None,
    ) -> HandlerResult:
        # The two shapes of is_input_required: the runner's wire mapping, or a model
        # from a middleware that short-circuited.
        if isinstance(result, Mapping):
            if result.get("resultType") != "input_required" or result.get("requestState") is None:
                return result
            return {**result, "requestState": self._seal(ctx, result["requestState"], identity, counts)}
        if isinstance(result, InputRequiredResult) and result.request_state is not None:
            token = self._seal(ctx, result.request_state, identity, counts)
            return result.model_copy(update={"request_state": token})
        return result

    def _seal(
        self,
        ctx: ServerRequestContext[Any, Any],
        state: object,
        identity: tuple[str, str] | None,
        counts: Counts | None,
    ) -> str:
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
        if counts is not None:
            counts.minted()
        return token


def protect(server: AnyServer, keys: rs.Keys | rs.Codec, /, **options: Unpack[BoundaryOptions]) -> Boundary:
    """Protect every ``requestState`` of ``server`` with a requeststate ``Boundary``; return it.

    The recommended set-up lets the deployment choose the keys, mode and ttl
    (``REQUESTSTATE_KEYS``, ``REQUESTSTATE_MODE``, ``REQUESTSTATE_TTL``):

        protect(server, rs.Codec.from_env(guard=RedisGuard.from_url(url)))

    ``keys`` is that ``Codec`` (its keys, modes, ttl, leeway, max_token_bytes,
    guard and clock are used, and passing any of them beside it is a
    ``TypeError``), or a ``KeyRing`` or raw secret with the codec's options.

    Works on an ``MCPServer`` (the SDK's ``RequestStateBoundary`` is replaced
    at its position in ``server.middleware``) and on the low-level ``Server``
    (which has none: the boundary goes right after the SDK's telemetry
    middleware). Middleware you add later with ``append`` runs inside it and
    sees plaintext. ``audience`` defaults to ``server.name`` (as the SDK's
    boundary does), except under ``bind="mcpd"``. Options: see ``BoundaryOptions``.

    Logs a warning when ``keys`` is ephemeral, and again on the first request
    that arrives over HTTP: ephemeral keys break every retry across workers.

    Raises:
        TypeError, ValueError: a bad option, or ``server`` already protected.
    """
    if options.get("bind", "request") != "mcpd" and "audience" not in options:
        options["audience"] = getattr(server, "name", None)
    boundary = Boundary(keys, **options)
    install(server, boundary, Boundary)
    start_with(server, boundary.begin)
    warn_if_ephemeral(boundary.keys)
    return boundary
