"""Changes to a token that need no key: each one a server that authenticates its state refuses.

Each mutation returns the changed token, or ``None`` when it does not apply to this token.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Final, TypeAlias

from requeststate import Mode

from ._decode import TOKEN, b64decode, b64encode_like, split_prefix

Mutation: TypeAlias = Callable[[str], "str | None"]
"""A change to a token; ``None`` when it does not apply to this token."""

_VERSION_OF: Final = {mode: mode.prefix[:-1] for mode in Mode}
# Each of our versions swapped for another of ours: signed <-> encrypted, xchacha -> encrypted.
_KNOWN_PREFIXES: Final = {
    _VERSION_OF[mode]: _VERSION_OF[other]
    for mode, other in (
        (Mode.SIGNED, Mode.ENCRYPTED),
        (Mode.ENCRYPTED, Mode.SIGNED),
        (Mode.XCHACHA, Mode.ENCRYPTED),
    )
}
_BLOB_TAG_BYTES: Final = 16  # the AEAD tag (GCM, Poly1305) at the end of a one-blob token
_MIN_BLOB_BYTES: Final = _BLOB_TAG_BYTES + 1


def _token(token: str) -> bool:
    """Whether ``token`` is base64 or hex parts and dots after any prefix: one a tag may end."""
    return TOKEN.fullmatch(split_prefix(token)[1]) is not None


def truncated(token: str) -> str | None:
    """Drop the last 4 characters."""
    return token[:-4] if len(token) > 4 else None


def extended(token: str) -> str | None:
    """Append ``AAAA`` (3 zero bytes of base64url)."""
    return token + "AAAA"


def _blob(token: str) -> tuple[str, str] | None:
    """``(prefix, blob)`` for a one-blob token (``v1e.<blob>``, ``enc:<blob>``, a bare blob), else ``None``.

    In a one-blob token the tag (or MAC) is the blob's last bytes; in a token of two or more
    parts whose first part is not a short prefix (``payload.mac``, ``v1.payload.mac``,
    ``header.payload.signature``) it is the last part.
    """
    prefix, body = split_prefix(token)
    return None if "." in body else (prefix, body)


def tag_removed(token: str) -> str | None:
    """The MAC or tag removed: the last part and its dot, or a one-blob token's last 16 bytes."""
    if not _token(token):
        return None
    blob = _blob(token)
    if blob is None:
        return token.rpartition(".")[0]
    prefix, body = blob
    raw = b64decode(body)
    if raw is None or len(raw) < _MIN_BLOB_BYTES:
        return None
    return prefix + b64encode_like(raw[:-_BLOB_TAG_BYTES], body)


def tag_emptied(token: str) -> str | None:
    """The MAC emptied: the last part of a token of two or more parts, its dot kept (``payload.``)."""
    if not _token(token) or _blob(token) is not None:
        return None
    return token.rpartition(".")[0] + "."


def tag_halved(token: str) -> str | None:
    """The MAC or tag cut to half its bytes: of the last part, or of a one-blob token's last 16 bytes."""
    if not _token(token):
        return None
    blob = _blob(token)
    if blob is None:
        head, _, mac = token.rpartition(".")
        raw = b64decode(mac) if mac else None
        if raw is None or len(raw) < 2:
            return None
        return f"{head}.{b64encode_like(raw[: len(raw) // 2], mac)}"
    prefix, body = blob
    raw = b64decode(body)
    if raw is None or len(raw) < _MIN_BLOB_BYTES:
        return None
    return prefix + b64encode_like(raw[: -_BLOB_TAG_BYTES // 2], body)


def tag_text_halved(token: str) -> str | None:
    """The last part cut to half its characters: a MAC compared as text, a prefix at a time."""
    if not _token(token) or _blob(token) is not None:
        return None
    head, _, mac = token.rpartition(".")
    return f"{head}.{mac[: len(mac) // 2]}" if len(mac) >= 2 else None


def prefix_swapped(token: str) -> str | None:
    """``v1.`` <-> ``v1e.`` (``v1x.`` -> ``v1e.``); another prefix gets an ``x`` appended (``encx:``)."""
    prefix, rest = split_prefix(token)
    if not prefix:
        return None
    name, separator = prefix[:-1], prefix[-1]
    return _KNOWN_PREFIXES.get(name, name + "x") + separator + rest


def random_like(token: str) -> str:
    """A state the server never minted: random base64url of the same length, after the same prefix."""
    keep, _ = split_prefix(token)
    length = len(token) - len(keep)
    return keep + secrets.token_urlsafe(length)[:length]
