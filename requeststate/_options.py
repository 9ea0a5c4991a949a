"""A codec's options: declared once (``CodecOptions``), checked once (``check_options``), at construction."""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Final, NamedTuple, TypedDict

if TYPE_CHECKING:
    from ._guard import AsyncGuard, Guard
    from ._metrics import Meter

__all__ = [
    "DEFAULT_MAX_TOKEN_BYTES",
    "DEFAULT_TTL",
    "INT64_MAX",
    "INT64_MIN",
    "MAX_TTL",
    "CodecOptions",
    "Settings",
    "check_int",
    "check_options",
    "guard_is_async",
    "now_from",
    "ttl_from_env",
]

INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1

DEFAULT_TTL: Final = 300
"""Seconds a token lives unless ``ttl=`` says otherwise: five minutes."""
MAX_TTL: Final = 86_400
"""The longest ``ttl`` accepted: one day. The spec asks for short lifetimes; a
state that must outlive a day belongs in the server's own storage."""
DEFAULT_MAX_TOKEN_BYTES: Final = 64 * 1024
"""The longest token minted or read unless ``max_token_bytes=`` says otherwise."""


class CodecOptions(TypedDict, total=False):
    """The options of a ``Codec`` besides its keys and mode: one declaration for every API that builds one.

    ``Codec``, the module functions, ``requeststate.mcp.Boundary``/``protect``
    and ``requeststate.mcp.SDKCodec`` all take these names, and each is checked
    when the codec is built, never per token.
    """

    ttl: int
    """Seconds a minted token lives: an ``int`` from 1 to ``MAX_TTL`` (one day); default 300."""
    leeway: int
    """Seconds of clock skew tolerated after a token's expiry: an ``int`` from 0 to ``MAX_TTL``; default 0."""
    max_token_bytes: int
    """Refuse a longer token before decoding anything, and refuse to mint one; default 64 KiB."""
    guard: Guard | AsyncGuard | None
    """A replay guard instance (``MemoryGuard()``, ``RedisGuard``, any ``Guard`` or
    ``AsyncGuard``): every token is accepted once, claimed after every other check.
    The codec tells the guard its ``ttl + leeway`` (``Guard.learn_lifetime``), and a
    guard that cannot keep claims that long refuses it then."""
    clock: Callable[[], float] | None
    """Unix seconds, read on each call without ``now=``; ``time.time`` when ``None``."""
    metrics: Meter | None
    """The OpenTelemetry meter tokens are counted on (docs/metrics.md): by default the
    meter ``requeststate`` of the global provider, when ``opentelemetry-api`` is
    installed; ``None`` counts nothing."""


_OPTION_NAMES: Final = frozenset(CodecOptions.__optional_keys__)


class Settings(NamedTuple):
    """``CodecOptions`` checked, with every default filled in."""

    ttl: int
    leeway: int
    max_token_bytes: int
    guard: Guard | AsyncGuard | None
    clock: Callable[[], float] | None
    metrics: Meter | None


def check_options(options: CodecOptions) -> Settings:
    """Every option checked, by name, type and range, and the defaults filled in.

    Raises:
        TypeError: an unknown name (``**options`` would otherwise swallow a typo), or a wrong type.
        ValueError: a value out of range.
    """
    unknown = sorted(set(options) - _OPTION_NAMES)
    if unknown:
        raise TypeError(
            f"unexpected option(s) {', '.join(unknown)}; the options are {', '.join(sorted(_OPTION_NAMES))}"
        )
    from ._metrics import default_meter  # here: _metrics imports the modes, which import us

    guard, clock = options.get("guard"), options.get("clock")
    _check_guard(guard)
    if clock is not None and not callable(clock):
        raise TypeError(f"clock must be a callable returning unix seconds, not {type(clock).__name__}")
    metrics = options["metrics"] if "metrics" in options else default_meter()
    if metrics is not None and not callable(getattr(metrics, "create_counter", None)):
        raise TypeError(f"metrics must be an OpenTelemetry Meter or None, not {type(metrics).__name__}")
    ttl = check_int("ttl", options.get("ttl", DEFAULT_TTL), 1, MAX_TTL)
    leeway = check_int("leeway", options.get("leeway", 0), 0, MAX_TTL)
    return Settings(
        ttl=ttl,
        leeway=leeway,
        max_token_bytes=check_int(
            "max_token_bytes", options.get("max_token_bytes", DEFAULT_MAX_TOKEN_BYTES), 1
        ),
        guard=guard,
        clock=clock,
        metrics=metrics,
    )


def check_int(name: str, value: object, minimum: int, maximum: int = INT64_MAX) -> int:
    """``value`` if it is an ``int`` (not a ``bool``) from ``minimum`` to ``maximum``; else raise.

    ``TypeError`` for another type, ``ValueError`` for an int out of range: both name the option.
    """
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if not minimum <= value <= maximum:
        raise ValueError(f"{name} must be an int from {_bound(minimum)} to {_bound(maximum)}, got {value}")
    return value


def _bound(value: int) -> str:
    return {INT64_MAX: "2**63-1", INT64_MIN: "-2**63"}.get(value, str(value))


def _check_guard(guard: object) -> None:
    """Refuse what cannot be a replay guard: a class, or an object with no callable ``claim``."""
    if guard is None:
        return
    if isinstance(guard, type):
        raise TypeError(f"guard must be an instance, such as {guard.__name__}(), not the class itself")
    if not callable(getattr(guard, "claim", None)):
        raise TypeError(
            f"guard must have a claim(token_id, expires_at, now) method; a {type(guard).__name__} has none"
        )


def guard_is_async(guard: object) -> bool:
    """Whether ``guard.claim`` is a coroutine function (an ``AsyncGuard``)."""
    return inspect.iscoroutinefunction(getattr(guard, "claim", None))


def now_from(now: object, clock: Callable[[], float] | None) -> int:
    """The time a call runs at: ``now`` if given (an int), else the clock's reading, in whole seconds."""
    if now is None:
        # time.time is looked up per call, so a test's patched clock (freezegun) is seen.
        return int(time.time() if clock is None else clock())
    return check_int("now", now, INT64_MIN)


def ttl_from_env(environ: Mapping[str, str], default: int, name: str = "REQUESTSTATE_TTL") -> int:
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
