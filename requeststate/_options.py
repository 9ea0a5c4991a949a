"""A codec's options, each declared once with its default (``CodecOptions``), and checked once."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Final, TypedDict

from ._bounds import check_int
from ._env import ENV_TTL
from ._guard import AsyncGuard, Guard, check_guard
from ._metrics import Meter, default_meter
from ._modes import Mode, Modes, wire_modes

__all__ = [
    "DEFAULT_LEASE",
    "DEFAULT_LEEWAY",
    "DEFAULT_MAX_TOKEN_BYTES",
    "DEFAULT_MODE",
    "DEFAULT_TTL",
    "MAX_TTL",
    "CodecOptions",
    "Context",
    "Settings",
    "check_options",
    "refuse_unknown",
    "ttl_from_env",
]

DEFAULT_MODE: Final = Mode.ENCRYPTED
"""The mode a codec mints and reads unless ``mode=`` says otherwise: the state confidential too."""
DEFAULT_TTL: Final = 300
"""Seconds a token lives unless ``ttl=`` says otherwise: five minutes."""
MAX_TTL: Final = 86_400
"""The longest ``ttl`` accepted: one day. The spec asks for short lifetimes; a
state that must outlive a day belongs in the server's own storage."""
DEFAULT_LEEWAY: Final = 0
"""Seconds of clock skew tolerated after a token's expiry unless ``leeway=`` says otherwise (as mcp.d)."""
DEFAULT_LEASE: Final = 60
"""Seconds the first call of an exactly-once redemption (``Codec.redeem``) holds its action unless
``lease=`` says otherwise: an identical retry within them is told ``in_progress`` (retry), after
them ``outcome_unknown``. Nothing ever runs the action again, whatever the lease: it decides only
what a retry is told while no answer is kept (docs/exactly-once.md)."""
DEFAULT_MAX_TOKEN_BYTES: Final = 128 * 1024
"""The longest token minted or read unless ``max_token_bytes=`` says otherwise: 128 KiB.

It carries a state of up to 73,500 bytes in every mode (``n`` bytes of state become
at most ``16n/9 + 250`` bytes of token in ``xchacha``, the longest), so the SDK's
own boundary envelope of a 64 KiB payload fits; a longer token is refused before
anything in it is decoded.
"""


class CodecOptions(TypedDict, total=False):
    """The options of a ``Codec`` besides its keys: one declaration for every API that builds one.

    ``Codec``, ``Codec.from_env``, ``Codec.replace``, the module functions,
    ``requeststate.mcp.protect``/``Boundary`` and ``requeststate.mcp.SDKCodec``
    all take these names, and each is checked when the codec is built, never per token.
    """

    mode: Modes
    """``"encrypted"`` (the default: the client can neither read nor change the state),
    ``"signed"`` (it can read it, not change it) or ``"xchacha"`` (encrypted, with no
    per-key budget), a ``Mode``, or a tuple while migrating (the first mints). The
    server chooses, never the token."""
    ttl: int
    """Seconds a minted token lives: an ``int`` from 1 to ``MAX_TTL`` (one day); default 300."""
    leeway: int
    """Seconds of clock skew tolerated after a token's expiry: an ``int`` from 0 to ``MAX_TTL``; default 0."""
    max_token_bytes: int
    """Refuse a longer token before decoding anything, and refuse to mint one; default 131072 (128 KiB)."""
    guard: Guard | AsyncGuard | None
    """A replay guard instance (``MemoryGuard()``, ``RedisGuard``, any ``Guard`` or
    ``AsyncGuard``): every token is accepted once, claimed after every other check.
    The codec tells the guard its ``leeway`` (``Guard.learn_leeway``), and a guard
    that serves codecs of another leeway refuses it then. Default ``None``."""
    clock: Callable[[], float] | None
    """Unix seconds, read on each call without ``now=``; ``time.time`` when ``None``, the default."""
    lease: int
    """Seconds an exactly-once redemption's first call (``Codec.redeem``) holds its action before an
    identical retry is told ``outcome_unknown`` rather than ``in_progress``: an ``int`` from 1 to
    ``MAX_TTL``; default 60."""
    metrics: Meter | None
    """The OpenTelemetry meter tokens are counted on (docs/metrics.md): by default the
    meter ``requeststate`` of the global provider, when ``opentelemetry-api`` is
    installed; ``None`` counts nothing."""


class Context(TypedDict, total=False):
    """What a token is minted for or checked against: the identity it is bound to, and the time."""

    subject: str
    """The authenticated user, from the auth context (never the request); ``""``, the default: none."""
    tool: str | None
    """The tool, prompt or resource the state belongs to; ``None``, the default, binds the subject alone."""
    now: int | None
    """Unix seconds to mint or verify at; ``None``, the default: the codec's clock."""


@dataclass(frozen=True, slots=True)
class Settings:
    """``CodecOptions`` checked, every default filled in: one field for each option, by the same name."""

    mode: tuple[Mode, ...]
    ttl: int
    leeway: int
    max_token_bytes: int
    guard: Guard | AsyncGuard | None
    clock: Callable[[], float] | None
    lease: int
    metrics: Meter | None

    def as_options(self) -> CodecOptions:
        """These settings as options: what builds the same codec again."""
        return {field.name: getattr(self, field.name) for field in fields(self)}  # type: ignore[return-value]


_OPTION_NAMES: Final = frozenset(CodecOptions.__optional_keys__)


def check_options(options: CodecOptions) -> Settings:
    """Every option checked, by name, type and range, and the defaults filled in.

    Raises:
        TypeError: an unknown name (``**options`` would otherwise swallow a typo), or a wrong type.
        ValueError: a value out of range.
    """
    refuse_unknown(options, _OPTION_NAMES)
    modes, _ = wire_modes(options.get("mode", DEFAULT_MODE))
    guard, clock = options.get("guard"), options.get("clock")
    check_guard(guard)
    if clock is not None and not callable(clock):
        raise TypeError(f"clock must be a callable returning unix seconds, not {type(clock).__name__}")
    metrics = options["metrics"] if "metrics" in options else default_meter()
    if metrics is not None and not callable(getattr(metrics, "create_counter", None)):
        raise TypeError(f"metrics must be an OpenTelemetry Meter or None, not {type(metrics).__name__}")
    return Settings(
        mode=modes,
        ttl=check_int("ttl", options.get("ttl", DEFAULT_TTL), 1, MAX_TTL),
        leeway=check_int("leeway", options.get("leeway", DEFAULT_LEEWAY), 0, MAX_TTL),
        max_token_bytes=check_int(
            "max_token_bytes", options.get("max_token_bytes", DEFAULT_MAX_TOKEN_BYTES), 1
        ),
        guard=guard,
        clock=clock,
        lease=check_int("lease", options.get("lease", DEFAULT_LEASE), 1, MAX_TTL),
        metrics=metrics,
    )


def refuse_unknown(options: Mapping[str, object], names: frozenset[str]) -> None:
    """Raise ``TypeError`` naming every option not among ``names``, and the options there are.

    ``**options`` would otherwise swallow a typo, and the default would run.
    """
    unknown = sorted(set(options) - names)
    if unknown:
        raise TypeError(
            f"unexpected option(s) {', '.join(unknown)}; the options are {', '.join(sorted(names))}"
        )


def ttl_from_env(environ: Mapping[str, str], default: int, name: str = ENV_TTL) -> int:
    """``REQUESTSTATE_TTL``, whole seconds from 1 to ``MAX_TTL``; ``default`` when it is unset or empty."""
    text = environ.get(name, "").strip()
    if not text:
        return default
    # Its length first: int() of thousands of digits raises an error of its own, naming no variable.
    if not (
        text.isascii() and text.isdecimal() and len(text) <= len(str(MAX_TTL)) and 1 <= int(text) <= MAX_TTL
    ):
        # Never the value: a secret pasted into the wrong variable would reach the log.
        raise ValueError(
            f"{name} must be whole seconds from 1 to {MAX_TTL} (a day); its value is not: "
            f"set it as {name}=300, for five minutes"
        )
    return int(text)
