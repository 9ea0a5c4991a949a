"""What the client can read in a state, and how it rebuilds a changed one without any key.

A state is peeled layer by layer, as an attacker would: JSON, form-encoded text
(``a=1&b=2``), base64 (standard and URL-safe, padded or not), hex, zlib, gzip,
raw deflate, any one part of a dot-separated token (a prefix such as ``v1.``,
``v1e.`` or ``enc:`` is read past, never trusted), and an unkeyed hash (MD5, SHA-1
or SHA-2) beside the content it covers: in text after or before a separator, in hex
or base64, of the text or of its decoded bytes, or appended or prepended to decoded
bytes. One token's walk is bounded as a whole (``MAX_DECODED``). Each way of
reading a state ends at a JSON value (or form fields) and comes with the function
that wraps a changed value back the same way, recomputing the hash: a state so
encoded can be forged by anyone.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final
from urllib.parse import quote, unquote

from ._decode import (
    BASE64,
    COMPRESSIONS,
    HEX,
    MAX_JSON_VALUES,
    MAX_READ_CHARS,
    b64decode,
    b64encode_like,
    hex_like,
    json_values,
    parse_json,
    split_prefix,
)

MAX_DECODED: Final = 4 << 20
"""The most bytes (and characters) one token's walk reads, all its layers and parts together: each
layer read (decoded, inflated, or text parsed) spends its size. A state of 16 parts, each inflating
to 1 MiB of JSON, or such a state compressed again, costs no more than this to read."""
MAX_VALUES_READ: Final = 2 * MAX_JSON_VALUES
"""The most JSON values one token's walk parses, all its layers and parts together (each text
spends what it may hold): a parsed value takes far more memory than its text."""
MAX_READINGS: Final = 64
"""The most ways to read one token kept."""
_MAX_DEPTH: Final = 8
_MAX_PARTS: Final = 16  # a token of more dot-separated parts is not read part by part
_MIN_ENCODED: Final = 8  # shorter text is not worth decoding as base64 or hex
_FORM_KEY: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-\[\]]*")
_HASH_SEPARATORS: Final = ".:|~$"
_HASHES: Final = ("md5", "sha1", "sha224", "sha256", "sha384", "sha512")
_DIGEST_SIZES: Final = sorted({hashlib.new(name).digest_size for name in _HASHES}, reverse=True)

Rebuild = Callable[[object], bytes]
"""Wraps a changed JSON value (or form fields) back into bytes, the way the original was wrapped."""


@dataclass(frozen=True)
class Reading:
    """One way to read a token without a key.

    ``value`` is the JSON value (or the form fields, a ``dict`` of ``str``) under the layers;
    ``wrapping`` names them, outermost first (``base64url(zlib(JSON))``); ``hashed`` names
    the unkeyed hash the rebuild recomputes (``sha256 hex``), if any.
    """

    value: object
    wrapping: str
    rebuild_bytes: Rebuild
    hashed: str | None = None

    def rebuild(self, value: object) -> str:
        """A token holding ``value`` instead, wrapped (and hashed) as the original was."""
        return self.rebuild_bytes(value).decode("utf-8")


class _Walk:
    """What is left of one token's ``MAX_DECODED`` and ``MAX_VALUES_READ``: every layer and part of it
    spends from the one budget."""

    def __init__(self) -> None:
        self.left = MAX_DECODED
        self.values_left = MAX_VALUES_READ

    def spend(self, size: int, values: int = 0) -> bool:
        """Spend ``size`` bytes and ``values``; whether they fitted (once not, nothing more is read)."""
        self.left -= size
        self.values_left -= values
        return self.left >= 0 and self.values_left >= 0


def readings(token: str) -> list[Reading]:
    """Every way found to read ``token`` down to JSON (or form fields) without a key (up to
    ``MAX_READINGS``, within ``MAX_DECODED``)."""
    return list(_token_readings(token))


@functools.lru_cache(maxsize=4)
def _token_readings(token: str) -> tuple[Reading, ...]:
    # Several checks read each state, and a server may mint the same one every round: read it once.
    return _distinct(_text(token, 0, _Walk()))


def byte_readings(raw: bytes) -> list[Reading]:
    """Every way found to read decoded bytes down to JSON (or form fields) without a key."""
    return list(_distinct(_bytes(raw, 0, _Walk())))


def _distinct(found: Iterator[Reading]) -> tuple[Reading, ...]:
    distinct: dict[str, Reading] = {}
    for reading in found:
        distinct.setdefault(reading.wrapping, reading)
        if len(distinct) == MAX_READINGS:
            break
    return tuple(distinct.values())


def _text(text: str, depth: int, walk: _Walk) -> Iterator[Reading]:
    if depth > _MAX_DEPTH or not text or len(text) > MAX_READ_CHARS:
        return
    if not walk.spend(len(text), json_values(text)):
        return
    value = parse_json(text)
    if value is not None:
        yield Reading(value, "JSON", _dump_like(text))
        return
    fields = _form(text)
    if fields is not None:
        yield Reading(fields, "form-encoded text", _form_rebuild(text))
    yield from _hashed(text, depth, walk)
    prefix, rest = split_prefix(text)
    if prefix and not prefix.endswith("."):  # after a dot, the rest is a part (below)
        yield from _prefixed(prefix, rest, depth, walk)
    if "." in text:
        yield from _parts(text, depth, walk)
    else:
        yield from _encoded(text, depth, walk)


def _dump_like(original: str) -> Rebuild:
    """JSON in the original's spacing (compact, or ``json.dumps``'s default) and escaping."""
    separators = (", ", ": ") if ", " in original or ": " in original else (",", ":")
    ascii_only = original.isascii()
    return lambda value: json.dumps(value, separators=separators, ensure_ascii=ascii_only).encode("utf-8")


def _form(text: str) -> dict[str, str] | None:
    """``a=1&b=x`` (or ``;``-separated) as fields, when every piece is a ``name=value``."""
    for separator in "&;":
        fields = [piece.partition("=") for piece in text.split(separator)]
        if all(eq and _FORM_KEY.fullmatch(name) and "=" not in value for name, eq, value in fields) and any(
            value for _, _, value in fields
        ):
            return {name: unquote(value) for name, _, value in fields}
    return None


def _form_rebuild(text: str) -> Rebuild:
    separator = "&" if "&" in text else ";"
    escaped = "%" in text

    def rebuild(value: object) -> bytes:
        assert isinstance(value, dict)
        pairs = (f"{name}={quote(str(item), safe='') if escaped else item}" for name, item in value.items())
        return separator.join(pairs).encode("utf-8")

    return rebuild


def _wrap(reading: Reading, wrapping: str, outer: Callable[[bytes], bytes]) -> Reading:
    """``reading`` under one more layer: ``outer`` wraps what its rebuild makes."""
    inner = reading.rebuild_bytes
    return Reading(reading.value, wrapping, lambda value: outer(inner(value)), reading.hashed)


def _layer(reading: Reading, name: str, outer: Callable[[bytes], bytes]) -> Reading:
    return _wrap(reading, f"{name}({reading.wrapping})", outer)


def _part_of(parts: list[str], index: int) -> Callable[[bytes], bytes]:
    """Puts a rebuilt part back in its place among the others."""
    before = "".join(part + "." for part in parts[:index]).encode()
    after = "".join("." + part for part in parts[index + 1 :]).encode()
    return lambda rebuilt: before + rebuilt + after


def _prefixed(prefix: str, rest: str, depth: int, walk: _Walk) -> Iterator[Reading]:
    lead = prefix.encode()
    for reading in _text(rest, depth + 1, walk):
        yield _wrap(reading, f"after '{prefix}': {reading.wrapping}", lambda rebuilt: lead + rebuilt)


def _parts(text: str, depth: int, walk: _Walk) -> Iterator[Reading]:
    parts = text.split(".")
    if len(parts) > _MAX_PARTS:
        return
    for index, part in enumerate(parts):
        for reading in _text(part, depth + 1, walk):
            where = f"part {index + 1} of {len(parts)}: {reading.wrapping}"
            yield _wrap(reading, where, _part_of(parts, index))


def _encoded(text: str, depth: int, walk: _Walk) -> Iterator[Reading]:
    """``text`` as hex or base64 of bytes that read further."""
    if len(text) < _MIN_ENCODED:
        return
    if HEX.fullmatch(text):
        spell = hex_like(text)
        for reading in _bytes(bytes.fromhex(text), depth + 1, walk):
            yield _layer(reading, "hex", lambda raw: spell(raw).encode())
    raw = b64decode(text) if BASE64.fullmatch(text) else None
    if raw is None:
        return
    padded = text.endswith("=")
    standard, urlsafe = any(c in text for c in "+/"), any(c in text for c in "-_")
    # Without a telling character either alphabet may be the server's: try both.
    alphabets = ("+/",) if standard else ("-_",) if urlsafe else ("-_", "+/")
    for reading in _bytes(raw, depth + 1, walk):
        for alphabet in alphabets:
            like = alphabet + ("=" if padded else "")
            name = "base64url" if alphabet == "-_" else "base64"
            yield _layer(reading, name, _b64_layer(like))


def _b64_layer(like: str) -> Callable[[bytes], bytes]:
    """Spells bytes in base64 like ``like``: its alphabet (``-_`` or ``+/``), padded if it ends in ``=``."""
    return lambda raw: b64encode_like(raw, like).encode()


def _bytes(raw: bytes, depth: int, walk: _Walk) -> Iterator[Reading]:
    """Bytes that decompress, or decode as printable UTF-8 text, read further."""
    if depth > _MAX_DEPTH or not raw or len(raw) > MAX_READ_CHARS or not walk.spend(len(raw)):
        return
    for name, magic, decompress, compress in COMPRESSIONS:
        if not raw.startswith(magic):
            continue
        try:
            inflated = decompress(raw, walk.left)
        except zlib.error:
            continue
        for reading in _bytes(inflated, depth + 1, walk):
            yield _layer(reading, name, compress)
    yield from _digest_inside(raw, depth, walk)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return
    if text.isprintable():
        yield from _text(text, depth + 1, walk)


# --- unkeyed hashes -----------------------------------------------------------------------------------


def _digest(tail: str) -> tuple[bytes, Callable[[bytes], str], str] | None:
    """A digest-sized value in ``tail``: its bytes, how to spell new ones alike, and the spelling's name."""
    if HEX.fullmatch(tail):
        return bytes.fromhex(tail), hex_like(tail), "hex"
    raw = b64decode(tail) if BASE64.fullmatch(tail) else None
    if raw is None:
        return None
    return raw, (lambda d: b64encode_like(d, tail)), "base64"


def _decoded(text: str) -> bytes | None:
    if HEX.fullmatch(text):
        return bytes.fromhex(text)
    return b64decode(text) if BASE64.fullmatch(text) else None


def _after_prefix(head: str) -> str | None:
    prefix, rest = split_prefix(head)
    return rest if prefix else None


def views(head: str) -> Iterator[tuple[str, Callable[[str], bytes | None]]]:
    """What a hash may cover: the text before it, the bytes that text decodes to, and both again
    after a prefix (``v1.``): a prefix does not make a hash a key."""
    yield "", lambda text: text.encode("utf-8")
    yield " of the decoded bytes", _decoded
    if _after_prefix(head) is not None:
        yield " of the text after the prefix", lambda text: (_after_prefix(text) or "").encode("utf-8")
        yield " of the decoded bytes after the prefix", lambda text: _decoded(_after_prefix(text) or "")


def _hashed(text: str, depth: int, walk: _Walk) -> Iterator[Reading]:
    """``head SEP hash(head)``, or ``hash(body) SEP body``: read the content, recompute the hash on
    every rebuild."""
    for separator in _HASH_SEPARATORS:
        head, found, tail = text.rpartition(separator)
        first, _, body = text.partition(separator)
        for digest_text, content, digest_first in ((tail, head, False), (first, body, True)):
            digest = _digest(digest_text) if found and content else None
            if digest is None:
                continue
            expected, spell, spelling = digest
            for algorithm in _HASHES:
                if hashlib.new(algorithm).digest_size != len(expected):
                    continue
                for view_name, view in views(content):
                    covered = view(content)
                    if covered is None or hashlib.new(algorithm, covered).digest() != expected:
                        continue
                    hashed = f"{algorithm} {spelling}{view_name}"
                    for reading in _text(content, depth + 1, walk):
                        yield _rehashing(reading, separator, algorithm, view, spell, hashed, digest_first)
                    return


def _rehashing(
    reading: Reading,
    separator: str,
    algorithm: str,
    view: Callable[[str], bytes | None],
    spell: Callable[[bytes], str],
    hashed: str,
    digest_first: bool,
) -> Reading:
    inner = reading.rebuild_bytes

    def rebuild(value: object) -> bytes:
        content = inner(value).decode("utf-8")
        digest = spell(hashlib.new(algorithm, view(content) or b"").digest())
        return (f"{digest}{separator}{content}" if digest_first else f"{content}{separator}{digest}").encode()

    if digest_first:
        return Reading(reading.value, f"{hashed} + '{separator}' + {reading.wrapping}", rebuild, hashed)
    return Reading(reading.value, f"{reading.wrapping} + '{separator}' + {hashed}", rebuild, hashed)


def _digest_inside(raw: bytes, depth: int, walk: _Walk) -> Iterator[Reading]:
    """``content || hash(content)`` or ``hash(content) || content`` in decoded bytes: read the content,
    recompute the hash on rebuild."""
    for size in _DIGEST_SIZES:
        for content, digest, where in (
            (raw[:-size], raw[-size:], "appended"),
            (raw[size:], raw[:size], "prepended"),
        ):
            if not content:
                continue
            for algorithm in _HASHES:
                if (
                    hashlib.new(algorithm).digest_size != size
                    or hashlib.new(algorithm, content).digest() != digest
                ):
                    continue
                hashed = f"{algorithm} {where}"
                for reading in _bytes(content, depth + 1, walk):
                    yield _rehashing_bytes(reading, algorithm, hashed, prepended=where == "prepended")
                return


def _rehashing_bytes(reading: Reading, algorithm: str, hashed: str, *, prepended: bool) -> Reading:
    inner = reading.rebuild_bytes

    def rebuild(value: object) -> bytes:
        changed = inner(value)
        digest = hashlib.new(algorithm, changed).digest()
        return digest + changed if prepended else changed + digest

    if prepended:
        return Reading(reading.value, f"{hashed} + {reading.wrapping}", rebuild, hashed)
    return Reading(reading.value, f"{reading.wrapping} + {hashed}", rebuild, hashed)


# --- JWT ------------------------------------------------------------------------------------------------


def alg_none(token: str) -> list[Reading]:
    """``token`` read as a JWT, each reading rebuilt with ``alg: none`` and no signature."""
    parts = token.split(".")
    if len(parts) != 3:
        return []
    raw = b64decode(parts[0])
    header = parse_json(raw) if raw is not None else None
    if not isinstance(header, dict) or "alg" not in header:
        return []
    unsigned = b64encode_like(json.dumps({**header, "alg": "none"}, separators=(",", ":")).encode(), parts[0])
    signed_none = f"{unsigned}.".encode()
    return [
        _wrap(reading, f"JWT alg none, payload {reading.wrapping}", lambda raw: signed_none + raw + b".")
        for reading in _text(parts[1], 1, _Walk())
    ]
