"""Numbers as the wire and the options take them: int64 integers, and seconds, checked by name and range."""

from __future__ import annotations

import math
from typing import Final

__all__ = ["INT64_MAX", "INT64_MIN", "check_int", "check_seconds"]

INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1


def check_int(name: str, value: object, minimum: int, maximum: int = INT64_MAX) -> int:
    """``value`` if it is an ``int`` (not a ``bool``) from ``minimum`` to ``maximum``; else raise.

    ``TypeError`` for another type, ``ValueError`` for an int out of range: both name the option.
    """
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if not minimum <= value <= maximum:
        raise ValueError(f"{name} must be an int from {_bound(minimum)} to {_bound(maximum)}, got {value}")
    return value


def check_seconds(name: str, value: object, *, maximum: float = math.inf) -> float:
    """``value`` as a float if it is a positive, finite number of seconds up to ``maximum`` (not a
    ``bool``); else raise."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise TypeError(f"{name} must be a number of seconds, not {type(value).__name__}")
    if not (math.isfinite(value) and 0 < value <= maximum):
        bound = "" if maximum == math.inf else f" up to {maximum:g}"
        raise ValueError(f"{name} must be a positive, finite number of seconds{bound}, got {value}")
    return float(value)


def _bound(value: int) -> str:
    return {INT64_MAX: "2**63-1", INT64_MIN: "-2**63"}.get(value, str(value))
