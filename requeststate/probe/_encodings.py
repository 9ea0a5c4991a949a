"""What the client can read in a state, and how it forges a changed one without any key.

A state is peeled layer by layer, as an attacker would: JSON, form-encoded text
(``a=1&b=2``), base64 (standard and URL-safe, padded or not), hex, zlib, gzip,
raw deflate, any one part of a dot-separated token, and a trailing unkeyed hash
(MD5, SHA-1 or SHA-2, in hex or base64, of the text before it or of its decoded
bytes). Each way of reading a state ends at a JSON value (or form fields) and
comes with the function that wraps a changed value back the same way,
recomputing the hash: a state so encoded can be forged by anyone.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import json
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final
from urllib.parse import quote, unquote

_MAX_DEPTH: Final = 8
_MIN_ENCODED: Final = 8  # shorter text is not worth decoding as base64 or hex
_MAX_INFLATED: Final = 1 << 20
_BASE64: Final = re.compile(r"[A-Za-z0-9+/_-]+={0,2}")
_HEX: Final = re.compile(r"(?:[0-9a-f]{2})+|(?:[0-9A-F]{2})+")
_FORM_KEY: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-\[\]]*")
_PRINTABLE_RUN: Final = re.compile(rb"[\x20-\x7e]{16,}")
_ENCODED: Final = re.compile(r"[A-Za-z0-9_\-+/.=]*")
_HASH_SEPARATORS: Final = ".:|~$"
_HASHES: Final = ("md5", "sha1", "sha224", "sha256", "sha384", "sha512")

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


def b64decode(text: str) -> bytes | None:
    """Either base64 alphabet, padded or not; ``None`` when it is not base64."""
    body = text.rstrip("=").replace("+", "-").replace("/", "_")
    try:
        return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError):
        return None


def b64encode_like(raw: bytes, original: str) -> str:
    """``raw`` in ``original``'s base64 alphabet (URL-safe unless it has ``+`` or ``/``) and padding."""
    standard = any(c in original for c in "+/")
    text = (base64.b64encode(raw) if standard else base64.urlsafe_b64encode(raw)).decode("ascii")
    return text if original.endswith("=") else text.rstrip("=")


def parse_json(raw: str | bytes) -> object | None:
    """A JSON object or array, else ``None``."""
    try:
        value: object = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict | list) else None


def readings(token: str) -> list[Reading]:
    """Every way found to read ``token`` down to JSON (or form fields) without a key."""
    found: dict[str, Reading] = {}
    for reading in _text(token, 0):
        found.setdefault(reading.wrapping, reading)
    return list(found.values())


def _text(text: str, depth: int) -> Iterator[Reading]:
    if depth > _MAX_DEPTH or not text:
        return
    value = parse_json(text)
    if value is not None:
        yield Reading(value, "JSON", _dump_like(text))
        return
    fields = _form(text)
    if fields is not None:
        yield Reading(fields, "form-encoded text", _form_rebuild(text))
    yield from _hashed(text, depth)
    if "." in text:
        yield from _parts(text, depth)
    else:
        yield from _encoded(text, depth)


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


def _parts(text: str, depth: int) -> Iterator[Reading]:
    parts = text.split(".")
    for index, part in enumerate(parts):
        for reading in _text(part, depth + 1):
            where = f"part {index + 1} of {len(parts)}: {reading.wrapping}"
            yield _wrap(reading, where, _part_of(parts, index))


def _hex_layer(upper: bool) -> Callable[[bytes], bytes]:
    return lambda raw: (raw.hex().upper() if upper else raw.hex()).encode()


def _encoded(text: str, depth: int) -> Iterator[Reading]:
    """``text`` as hex or base64 of bytes that read further."""
    if len(text) < _MIN_ENCODED:
        return
    if _HEX.fullmatch(text):
        upper = text.isupper()
        for reading in _bytes(bytes.fromhex(text), depth + 1):
            yield _layer(reading, "hex", _hex_layer(upper))
    raw = b64decode(text) if _BASE64.fullmatch(text) else None
    if raw is None:
        return
    padded = text.endswith("=")
    standard, urlsafe = any(c in text for c in "+/"), any(c in text for c in "-_")
    # Without a telling character either alphabet may be the server's: try both.
    alphabets = (False,) if standard else (True,) if urlsafe else (True, False)
    for reading in _bytes(raw, depth + 1):
        for url in alphabets:
            yield _layer(reading, "base64url" if url else "base64", _b64_layer(url, padded))


def _b64_layer(urlsafe: bool, padded: bool) -> Callable[[bytes], bytes]:
    def outer(raw: bytes) -> bytes:
        text = base64.urlsafe_b64encode(raw) if urlsafe else base64.b64encode(raw)
        return text if padded else text.rstrip(b"=")

    return outer


def _deflate(raw: bytes) -> bytes:
    compressor = zlib.compressobj(wbits=-15)
    return compressor.compress(raw) + compressor.flush()


def _inflate(wbits: int) -> Callable[[bytes], bytes]:
    """Decompress at most ``_MAX_INFLATED`` bytes: the state comes from the server, maybe a bomb."""

    def inflate(raw: bytes) -> bytes:
        inflater = zlib.decompressobj(wbits=wbits)
        inflated = inflater.decompress(raw, _MAX_INFLATED)
        if inflater.unconsumed_tail or not inflater.eof:
            raise zlib.error("too large, or truncated")
        return inflated

    return inflate


_COMPRESSIONS: Final[tuple[tuple[str, bytes, Callable[[bytes], bytes], Callable[[bytes], bytes]], ...]] = (
    ("zlib", b"\x78", _inflate(15), zlib.compress),
    ("gzip", b"\x1f\x8b", _inflate(31), lambda raw: gzip.compress(raw, mtime=0)),
    ("deflate", b"", _inflate(-15), _deflate),
)


def _bytes(raw: bytes, depth: int) -> Iterator[Reading]:
    """Bytes that decompress, or decode as printable UTF-8 text, read further."""
    if depth > _MAX_DEPTH or not raw:
        return
    for name, magic, decompress, compress in _COMPRESSIONS:
        if not raw.startswith(magic):
            continue
        try:
            inflated = decompress(raw)
        except zlib.error:
            continue
        for reading in _bytes(inflated, depth + 1):
            yield _layer(reading, name, compress)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return
    if text.isprintable():
        yield from _text(text, depth + 1)


# --- unkeyed hashes -----------------------------------------------------------------------------------


def _digest(tail: str) -> tuple[bytes, Callable[[bytes], str], str] | None:
    """A digest-sized value in ``tail``: its bytes, how to spell new ones alike, and the spelling's name."""
    if _HEX.fullmatch(tail):
        upper = tail.isupper()
        return bytes.fromhex(tail), (lambda d: d.hex().upper() if upper else d.hex()), "hex"
    raw = b64decode(tail) if _BASE64.fullmatch(tail) else None
    if raw is None:
        return None
    return raw, (lambda d: b64encode_like(d, tail)), "base64"


def _views(head: str) -> Iterator[tuple[str, Callable[[str], bytes | None]]]:
    """What a hash may cover: the text before it, or the bytes that text decodes to."""
    yield "", lambda text: text.encode("utf-8")
    yield " of the decoded bytes", lambda text: b64decode(text) if _BASE64.fullmatch(text) else None
    yield " of the decoded bytes", lambda text: bytes.fromhex(text) if _HEX.fullmatch(text) else None


def _hashed(text: str, depth: int) -> Iterator[Reading]:
    """``head SEP hash(head)``: read ``head`` and recompute the hash on every rebuild."""
    for separator in _HASH_SEPARATORS:
        head, found, tail = text.rpartition(separator)
        digest = _digest(tail) if found and head else None
        if digest is None:
            continue
        expected, spell, spelling = digest
        for algorithm in _HASHES:
            if hashlib.new(algorithm).digest_size != len(expected):
                continue
            for view_name, view in _views(head):
                covered = view(head)
                if covered is None or hashlib.new(algorithm, covered).digest() != expected:
                    continue
                for reading in _text(head, depth + 1):
                    yield _rehashing(
                        reading, separator, algorithm, view, spell, f"{algorithm} {spelling}{view_name}"
                    )
                return


def _rehashing(
    reading: Reading,
    separator: str,
    algorithm: str,
    view: Callable[[str], bytes | None],
    spell: Callable[[bytes], str],
    hashed: str,
) -> Reading:
    inner = reading.rebuild_bytes

    def rebuild(value: object) -> bytes:
        head = inner(value).decode("utf-8")
        covered = view(head) or b""
        return f"{head}{separator}{spell(hashlib.new(algorithm, covered).digest())}".encode()

    wrapping = f"{reading.wrapping} + '{separator}' + {hashed}"
    return Reading(reading.value, wrapping, rebuild, hashed)


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
        for reading in _text(parts[1], 1)
    ]


# --- how much the client can read --------------------------------------------------------------------------


def _shape(value: object) -> str:
    if isinstance(value, dict):
        keys = sorted(str(k) for k in value)
        shown = ", ".join(keys[:6]) + (", ..." if len(keys) > 6 else "")
        return f"an object (keys: {shown})"
    return f"a {type(value).__name__}"


def readable(token: str) -> str | None:
    """What of ``token`` the client can read, or ``None`` when it looks opaque.

    A heuristic, since the plaintext is unknown: the token reads down to JSON or form
    fields through the layers of ``readings``, or it is plain text (it has characters
    no base64 alphabet uses), or one of its dot-separated parts base64-decodes to a run
    of 16 or more printable characters.
    """
    found = readings(token)
    if found:
        return f"{found[0].wrapping}, {_shape(found[0].value)}"
    if not _ENCODED.fullmatch(token):
        return "the state is plain text, not an encoding"
    for index, part in enumerate(token.split("."), start=1):
        raw = b64decode(part) if part else None
        if raw is not None and _PRINTABLE_RUN.search(raw):
            return f"part {index} base64-decodes to readable text"
    return None


# --- changing a value ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Edit:
    """A value with one field changed, which field (``restaurant``, ``s.step``, ``items[0]``) and how.

    The change is named, never the values: a report must not copy the state into CI logs.
    """

    value: object
    field: str
    change: str


def edits(value: object) -> list[Edit]:
    """``value`` with its first string changed, then (another edit) its first number, then its first boolean.

    A string that holds JSON is edited inside (a state nested in an envelope), so the
    forgery stays well-formed and a refusal cannot come from a parse error alone.
    """
    found = []
    for wanted in (str, int, bool):
        edit = _edit_first(value, wanted, "")
        if edit is not None:
            found.append(edit)
    return found


def _edit_first(value: object, wanted: type, path: str) -> Edit | None:
    if isinstance(value, dict):
        for key, item in value.items():
            edit = _edit_first(item, wanted, f"{path}.{key}" if path else str(key))
            if edit is not None:
                return Edit({**value, key: edit.value}, edit.field, edit.change)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            edit = _edit_first(item, wanted, f"{path}[{index}]")
            if edit is not None:
                return Edit([*value[:index], edit.value, *value[index + 1 :]], edit.field, edit.change)
    elif isinstance(value, str):
        return _edit_string(value, wanted, path)
    elif wanted is int and isinstance(value, int) and not isinstance(value, bool):
        return Edit(value + 1, path, "number +1")
    elif wanted is bool and isinstance(value, bool):
        return Edit(not value, path, "boolean flipped")
    return None


def _edit_string(value: str, wanted: type, path: str) -> Edit | None:
    nested = parse_json(value)
    if nested is not None:
        edit = _edit_first(nested, wanted, path)
        if edit is None:
            return None
        spacing = (", ", ": ") if ", " in value or ": " in value else (",", ":")
        return Edit(json.dumps(edit.value, separators=spacing), edit.field, edit.change)
    if wanted is int and value.isdigit():  # a number in form fields or text: still a number
        return Edit(str(int(value) + 1), path, "number +1")
    if wanted is str and value and not value.isdigit():
        return Edit(value + "x", path, "'x' appended")
    return None
