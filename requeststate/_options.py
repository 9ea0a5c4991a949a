"""The checks on a codec's options, each in one place: run once, when a ``Codec`` is built."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Final, TypeAlias

from ._envelope import INT64_MAX
from ._keys import KeyRing

__all__ = ["Keys", "check_clock", "check_guard", "check_int", "guard_is_async", "key_ring"]

Keys: TypeAlias = "KeyRing | bytes"
"""What a codec takes as keys: a ``KeyRing``, or one raw secret of at least 32 bytes."""

# The co_flags bit of an async def (inspect.CO_COROUTINE), read directly: the
# inspect module costs an import of ast and dis.
_CO_COROUTINE: Final = 0x80


@lru_cache(maxsize=16)
def _ring_of_secret(secret: bytes) -> KeyRing:
    return KeyRing(secret)


def key_ring(keys: object) -> KeyRing:
    """``keys`` as a ring: a ``KeyRing`` itself, or the ring of one raw secret (derived once)."""
    if isinstance(keys, KeyRing):
        return keys
    if isinstance(keys, bytes):
        # Derive once per secret, not per codec: HKDF costs more than a token.
        return _ring_of_secret(keys)
    raise TypeError(f"keys must be a KeyRing or bytes, not {type(keys).__name__}")


def check_int(name: str, value: object, minimum: int) -> int:
    """``value`` if it is an ``int`` (not a ``bool``) from ``minimum`` to 2**63-1; else raise."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if not minimum <= value <= INT64_MAX:
        raise ValueError(f"{name} must be an int from {minimum} to 2**63-1, got {value}")
    return value


def check_guard(guard: object) -> None:
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
    # A bound method forwards __code__ to its function.
    code = getattr(getattr(guard, "claim", None), "__code__", None)
    return code is not None and bool(code.co_flags & _CO_COROUTINE)


def check_clock(clock: object) -> Callable[[], float] | None:
    """``clock`` if it is ``None`` or callable; else raise."""
    if clock is not None and not callable(clock):
        raise TypeError(f"clock must be a callable returning unix seconds, not {type(clock).__name__}")
    return clock
