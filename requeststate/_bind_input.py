"""What a token is bound to: the bind input of an identity, which each key's bind tag covers.

docs/wire-format.md, "The bind tag": ``b = hex(HMAC-SHA256(mac_key, bind_input))``,
where ``bind_input`` is ``subject``, or ``subject + "\\0" + tool``.
"""

from __future__ import annotations

from typing import Final

__all__ = ["bind_input"]

# JSON's whitespace: what may stand before the "{" that opens a payload.
_JSON_SPACE: Final = " \t\r\n"


def bind_input(subject: object, tool: object) -> bytes:
    """The bytes a bind tag covers.

    Takes any values, as a client's request may hold any: raises ``TypeError``
    for a subject that is not a ``str`` or a tool neither a ``str`` nor ``None``,
    and ``ValueError`` for one containing U+0000 (the separator) or a lone
    surrogate, or for a subject-only identity that reads as a JSON object.
    """
    if not isinstance(subject, str) or not (tool is None or isinstance(tool, str)):
        raise TypeError("subject must be a str and tool a str or None")
    if "\0" in subject or (tool is not None and "\0" in tool):
        raise ValueError("subject and tool must not contain U+0000")
    # mac_key keys both the bind tag and the v1. MAC, and a signed token shows
    # its bind tag. A subject-only bind input that is itself a payload would
    # make its tag a valid MAC of that payload: a forgery for any identity.
    # Every payload opens with "{" after JSON whitespace; with a tool the input
    # holds U+0000, which no payload does.
    if tool is None and subject.lstrip(_JSON_SPACE).startswith("{"):
        raise ValueError(
            "a subject bound without a tool must not start with '{' (it would read as a payload)"
        )
    # join, not an f-string: a str subclass (a StrEnum) is bound by its content,
    # as the cache (keyed by equality) and the spec see it, not by its __format__.
    text = subject if tool is None else "\0".join((subject, tool))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("subject and tool must be valid Unicode (no lone surrogates)") from None
