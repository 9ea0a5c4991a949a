"""The payload's type, ``Payload``: ``{s, exp, b, id}`` as msgspec reads and writes it.

A module of its own, never compiled: msgspec reads a Struct's annotations
(with their ``Meta`` bounds) when the class is created, and mypyc rewrites a
compiled module's annotations (``id`` would read as ``type``, the bounds
gone). ``_envelope`` holds the rules over it.
"""

from __future__ import annotations

from typing import Annotated, Final

import msgspec

__all__ = ["INT64_MAX", "INT64_MIN", "Payload"]

INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1


class Payload(msgspec.Struct, frozen=True, omit_defaults=True, gc=False):
    """The signed or sealed claims. Field order is the wire order: s, exp, b, id.

    ``id`` is our extension (mcp.d ignores it): a unique token id that a replay
    guard claims. Tokens from other writers may lack it.
    """

    s: str
    exp: Annotated[int, msgspec.Meta(ge=INT64_MIN, le=INT64_MAX)]
    # 64 lowercase hex: the length here, the alphabet in ``read_payload`` (a
    # regex here would double the cost of parsing).
    b: Annotated[str, msgspec.Meta(min_length=64, max_length=64)]
    id: Annotated[str, msgspec.Meta(min_length=1, max_length=64)] | None = None
