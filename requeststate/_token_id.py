"""Token ids: unique, and telling when the token was minted, so a replay guard can date a token.

An id is a UUIDv7 (RFC 9562) in its text form, ``xxxxxxxx-xxxx-7xxx-yxxx-xxxxxxxxxxxx``:
the first 48 bits are the mint time in unix milliseconds (whole seconds here: the
codec's clock counts seconds), then the version and variant bits, then 74 random bits.
A replay guard reads the mint time back with ``minted_at`` to refuse every token
minted before its store's memory began (docs/replay-guards.md). Ids of another
layout (requeststate 0.3 wrote 32 random hex digits; another writer may write
anything) have no mint time: ``minted_at`` returns ``None`` for them.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["TOKEN_ID_RANDOM_BYTES", "minted_at", "new_token_id"]

TOKEN_ID_RANDOM_BYTES: Final = 10
"""Bytes of CSPRNG output per id: 80 bits, of which the version and variant bits overwrite 6."""
# UUIDv7's timestamp field: 48 bits of unix milliseconds, from 1970 to the year 10889.
_MAX_MILLISECONDS: Final = 2**48 - 1
_UUID7: Final = re.compile(r"([0-9a-f]{8})-([0-9a-f]{4})-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


def new_token_id(minted: int, random: bytes) -> str:
    """The id of a token minted at unix second ``minted``, from ``TOKEN_ID_RANDOM_BYTES`` of ``random``.

    A time that UUIDv7 cannot hold (before 1970, after 10889) gets an id of the
    same layout whose time is 0: a guard then treats it as it treats an id with
    no time, the most cautious reading.
    """
    milliseconds = minted * 1000
    if not 0 <= milliseconds <= _MAX_MILLISECONDS:
        milliseconds = 0
    rand_a = int.from_bytes(random[:2]) & 0x0FFF
    rand_b = int.from_bytes(random[2:TOKEN_ID_RANDOM_BYTES]) & (2**62 - 1)
    value = (milliseconds << 80) | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | rand_b
    text = f"{value:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def minted_at(token_id: str) -> int | None:
    """The unix second a token was minted, read from its id; ``None`` for an id that does not tell.

    Only a UUIDv7 in lowercase text form, with a time after 1970-01-01, tells:
    any other id (another writer's, an older release's) answers ``None``.
    """
    match = _UUID7.fullmatch(token_id)
    if match is None:
        return None
    milliseconds = int(match[1] + match[2], 16)
    return milliseconds // 1000 if milliseconds else None
