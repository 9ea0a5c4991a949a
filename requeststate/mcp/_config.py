"""A boundary's options: declared once (``BoundaryOptions``), checked once, into its codec and counts."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection, Mapping
from typing import Any, Final, Literal, NamedTuple, TypeAlias, cast

import anyio.to_thread
from mcp.server.context import ServerRequestContext
from mcp_types.methods import INPUT_REQUIRED_METHODS

import requeststate as rs
from requeststate._seam import Counts, keeps_answers

from ._binding import (
    BINDINGS,
    Binding,
    access_token_sub_required,
    access_token_subject,
    authenticated_principal,
)
from ._once import exactly_once_targets

OnInvalid: TypeAlias = Literal["error", "reelicit"]
"""What a refused echo gets: the frozen -32602 error (default), or no state (the handler asks again)."""
SubjectSource: TypeAlias = Callable[[ServerRequestContext[Any, Any]], "str | None"]
"""Reads the authenticated principal from the SDK's auth context; ``None`` when unauthenticated."""
_ON_INVALID: Final = ("error", "reelicit")


class BoundaryOptions(rs.CodecOptions, total=False):
    """The options of ``Boundary`` and ``protect``: the codec's own (``requeststate.CodecOptions``) and these.

    Every option is checked when the boundary is built; none is read per request.
    Given a ``requeststate.Codec`` in place of keys, the boundary takes ``mode``,
    ``ttl``, ``leeway``, ``max_token_bytes``, ``guard`` and ``clock`` from it,
    and refuses them here; ``metrics`` is the boundary's own (it counts by method),
    by default the codec's meter.
    """

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
    exactly_once: Collection[str]
    """The targets whose action runs once per state, every identical retry getting the first call's
    answer (docs/exactly-once.md): tool names (``{"book"}``), ``"prompts/get:NAME"`` or
    ``"resources/read:URI"``. Needs a guard (every guard of requeststate keeps answers). Default: none."""
    allow_missing_sub: bool
    """Under ``bind="mcpd"`` only: bind an access token without ``sub`` as the
    empty subject, as mcp.d does, sharing its states with anonymous users and
    with every client whose token has no ``sub``. Default ``False``: such a
    request's state is refused both ways (-32603 at mint, refused on echo)."""


# Set on a Codec and nowhere else when one is given: two places to set a ttl would disagree.
# (metrics= is the boundary's own: it counts by method, on the meter it is given.)
_CODEC_SETTINGS: Final = tuple(name for name in rs.CodecOptions.__annotations__ if name != "metrics")


class BoundarySettings(NamedTuple):
    """``BoundaryOptions`` checked: what a boundary runs with."""

    codec: rs.Codec
    """Counts nothing itself (``metrics=None``): the boundary counts, by method."""
    on_invalid: OnInvalid
    bind: Binding
    subject: SubjectSource | None
    audience: str | None
    counts: Mapping[str, Counts]
    """One per input-required method; empty when nothing is counted."""
    guard: rs.Guard | rs.AsyncGuard | None
    """The guard as given (the codec's is wrapped to run off the loop): the one begun at start."""
    exactly_once: frozenset[tuple[str, str]]
    """The ``(method, target)`` pairs redeemed exactly once."""


def settings(keys: rs.Keys | rs.Codec, options: BoundaryOptions) -> BoundarySettings:
    """Every option checked (each is popped from ``options``), and the boundary's codec and counts built.

    Raises:
        TypeError, ValueError: a bad option, or a codec option passed beside a ``Codec``.
    """
    on_invalid = options.pop("on_invalid", "error")
    if on_invalid not in _ON_INVALID:
        raise ValueError(f"on_invalid must be one of {_ON_INVALID}, got {on_invalid!r}")
    bind = options.pop("bind", "request")
    if bind not in BINDINGS:
        raise ValueError(f"bind must be one of {BINDINGS}, got {bind!r}")
    subject = _subject(bind, options)
    if bind != "mcpd" and "audience" not in options:
        raise TypeError("Boundary needs audience=: the server's name (protect() passes it), or None")
    audience = options.pop("audience", None)
    if bind == "mcpd" and audience is not None:
        raise ValueError("bind='mcpd' binds no audience (mcp.d does not): leave audience unset")
    if audience is not None and not isinstance(audience, str):
        raise TypeError(f"audience must be a str or None, not {type(audience).__name__}")
    exactly_once = exactly_once_targets(options.pop("exactly_once", ()))
    given = _codec(keys, options)
    if exactly_once and not keeps_answers(given.guard):
        raise ValueError(
            "exactly_once needs a guard that keeps answers (every guard of requeststate does): "
            f"this codec has {'none' if given.guard is None else type(given.guard).__name__}"
        )
    # The boundary counts, by method, on the codec's meter; its own codec counts nothing.
    meter = given.metrics
    codec = given.replace(guard=_for_the_loop(given.guard), metrics=None)
    counts: dict[str, Counts] = {}
    if meter is not None:
        counts = {method: Counts(meter, codec.modes, method=method) for method in INPUT_REQUIRED_METHODS}
    return BoundarySettings(codec, on_invalid, bind, subject, audience, counts, given.guard, exactly_once)


def _subject(bind: Binding, options: BoundaryOptions) -> SubjectSource | None:
    allow_missing_sub = options.pop("allow_missing_sub", False)
    if not isinstance(allow_missing_sub, bool):
        raise TypeError(f"allow_missing_sub must be a bool, not {type(allow_missing_sub).__name__}")
    if allow_missing_sub and (bind != "mcpd" or "subject" in options):
        raise ValueError(
            "allow_missing_sub=True applies to bind='mcpd' with its default subject source only: "
            "the other bindings bind the client too, and a subject= source decides for itself"
        )
    if bind != "mcpd":
        default: SubjectSource = authenticated_principal
    else:
        default = access_token_subject if allow_missing_sub else access_token_sub_required
    subject = options.pop("subject", default)
    if subject is not None and not callable(subject):
        raise TypeError("subject must be a callable taking the request context, or None")
    return subject


def _codec(keys: rs.Keys | rs.Codec, options: BoundaryOptions) -> rs.Codec:
    """The codec of ``keys`` and the options left: the codec's own, which ``Codec`` checks."""
    if not isinstance(keys, rs.Codec):
        return rs.Codec(keys, **cast("rs.CodecOptions", options))
    beside = [name for name in _CODEC_SETTINGS if name in options]
    if beside:
        raise TypeError(
            f"{', '.join(beside)} cannot be passed beside a Codec, which carries its own: set "
            "them on the Codec (rs.Codec(keys, mode=..., ttl=...) or rs.Codec.from_env(...))"
        )
    if "metrics" in options:
        return keys.replace(metrics=options.pop("metrics"))
    if options:
        raise TypeError(
            f"unexpected option(s) {', '.join(sorted(options))}; see requeststate.mcp.BoundaryOptions"
        )
    return keys


class _OffLoop:
    """A synchronous guard's claim run in a worker thread: a slow store never stalls the event loop."""

    def __init__(self, guard: rs.Guard) -> None:
        self._guard = guard

    # No learn_leeway: the guard itself learned its codec's leeway, before it was wrapped.
    async def claim(self, claimed: rs.ClaimId, expires_at: int, now: int, /) -> bool:
        return await anyio.to_thread.run_sync(self._guard.claim, claimed, expires_at, now)

    async def redeem(
        self, claimed: rs.ClaimId, expires_at: int, now: int, request: str, lease_until: int, /
    ) -> str | None:
        redeem = self._guard.redeem  # type: ignore[attr-defined]
        kept: str | None = await anyio.to_thread.run_sync(
            redeem, claimed, expires_at, now, request, lease_until
        )
        return kept

    async def keep(self, claimed: rs.ClaimId, request: str, answer: str, /) -> None:
        await anyio.to_thread.run_sync(self._guard.keep, claimed, request, answer)  # type: ignore[attr-defined]


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
