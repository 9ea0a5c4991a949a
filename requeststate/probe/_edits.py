"""Changing a readable state one member at a time, and saying what of a token the client can read."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Final, Literal, TypeAlias, TypeVar

from ._decode import TOKEN, b64decode, parse_json, split_prefix
from ._readings import readings

MAX_MEMBERS: Final = 4096
"""The most members looked at in one state; the edits are spread over these."""
_MAX_DEPTH: Final = 64  # members nested deeper are not edited (a state nested as JSON text counts too)
_MAX_FIELD_CHARS: Final = 80
_MAX_DIGITS: Final = 1000  # Python refuses to read an int of over 4300 digits; no state holds one anyway
_PRINTABLE_RUN: Final = re.compile(rb"[\x20-\x7e]{16,}")

T = TypeVar("T")
Kind: TypeAlias = Literal["string", "number", "boolean", "null"]
Step: TypeAlias = str | int | tuple[str, str]
"""A member name, an array index, or ``(", ", ": ")``-style spacing: a string that holds JSON, read inside."""


@dataclass(frozen=True)
class Edit:
    """A value with one member changed, which member (``restaurant``, ``s.step``, ``items[0]``) and how.

    The change is named, never the values: a report must not copy the state into CI logs.
    """

    value: object
    field: str
    change: str
    kind: Kind


def edits(value: object, limit: int) -> list[Edit]:
    """``value`` with each member changed in turn: every string, number, boolean and null, nested
    ones included, in document order; when there are more than ``limit``, ``limit`` of them spread
    evenly. A string that holds JSON is edited inside (a state nested in an envelope), so the
    forgery stays well-formed and a refusal cannot come from a parse error alone.
    """
    found: list[tuple[tuple[Step, ...], str]] = []
    for path, name in _members(value, (), "", 0):
        found.append((path, name))
        if len(found) == MAX_MEMBERS:
            break
    made = []
    for path, name in spread(found, limit):
        edited = _edit_at(value, path)
        if edited is not None:
            changed, change, kind = edited
            made.append(Edit(changed, name, change, kind))
    return made


def members(value: object) -> int:
    """How many members ``edits`` may change in ``value`` (at most ``MAX_MEMBERS``)."""
    return sum(1 for _ in islice(_members(value, (), "", 0), MAX_MEMBERS))


def spread(items: Sequence[T], limit: int) -> list[T]:
    """At most ``limit`` of ``items``, evenly spaced, the first and the last included."""
    if len(items) <= limit:
        return list(items)
    if limit == 1:
        return [items[0]]
    return [items[round(i * (len(items) - 1) / (limit - 1))] for i in range(limit)]


def _name(path: str, step: str | int) -> str:
    if isinstance(step, int):
        return f"{path}[{step}]"
    return f"{path}.{step}" if path else step


def _members(
    value: object, path: tuple[Step, ...], name: str, depth: int
) -> Iterator[tuple[tuple[Step, ...], str]]:
    if depth > _MAX_DEPTH:
        return
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _members(item, (*path, key), _name(name, str(key)), depth + 1)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _members(item, (*path, index), _name(name, index), depth + 1)
    elif isinstance(value, str) and (nested := parse_json(value)) is not None:
        yield from _members(nested, (*path, _spacing(value)), name, depth + 1)
    elif value is None or isinstance(value, str | int | float | bool):
        yield path, name[:_MAX_FIELD_CHARS] or "(the whole state)"


def _spacing(text: str) -> tuple[str, str]:
    return (", ", ": ") if ", " in text or ": " in text else (",", ":")


def _edit_at(value: object, path: tuple[Step, ...]) -> tuple[object, str, Kind] | None:
    """``value`` with the member at ``path`` changed, how, and the member's kind."""
    if not path:
        return _changed(value)
    step, rest = path[0], path[1:]
    if isinstance(step, tuple):
        assert isinstance(value, str)
        inner = _edit_at(parse_json(value), rest)
        if inner is None:
            return None
        return json.dumps(inner[0], separators=step), inner[1], inner[2]
    if isinstance(value, dict) and isinstance(step, str):
        inner = _edit_at(value[step], rest)
        return None if inner is None else ({**value, step: inner[0]}, inner[1], inner[2])
    if isinstance(value, list) and isinstance(step, int):
        inner = _edit_at(value[step], rest)
        return None if inner is None else ([*value[:step], inner[0], *value[step + 1 :]], inner[1], inner[2])
    return None


def _changed(value: object) -> tuple[object, str, Kind] | None:
    if isinstance(value, bool):
        return not value, "boolean flipped", "boolean"
    if isinstance(value, int | float):
        return value + 1, "number +1", "number"
    if value is None:
        return "x", "null set to 'x'", "null"
    if isinstance(value, str):
        # A number in form fields or text stays a number; ``isdigit`` alone takes "²" for one.
        if value.isascii() and value.isdigit() and len(value) <= _MAX_DIGITS:
            return str(int(value) + 1), "number +1", "number"
        return value + "x", "'x' appended", "string"
    return None


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
    fields through the layers of ``readings``, or it is plain text (after any prefix, such
    as ``v1.`` or ``enc:``, it has characters no base64 alphabet uses, or parts that do
    not decode), or one of its dot-separated parts base64-decodes to a run of 16 or more
    printable characters.
    """
    found = readings(token)
    if found:
        return f"{found[0].wrapping}, {_shape(found[0].value)}"
    prefix, body = split_prefix(token)
    parts = body.split(".")
    # After a dot, a part that does not decode may be a MAC's text; after ':' (``user:alice``), text.
    undecoded = prefix[-1:] not in ("", ".") and any(b64decode(part) is None for part in parts)
    if token and (not TOKEN.fullmatch(body) or undecoded):
        return "the state is plain text, not an encoding"
    for index, part in enumerate(parts[:16], start=1):
        raw = b64decode(part) if part else None
        if raw is not None and _PRINTABLE_RUN.search(raw):
            return f"part {index} base64-decodes to readable text"
    return None
