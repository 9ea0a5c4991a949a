"""The bind input of an identity (docs/wire-format.md, "The bind tag"): what a token is bound to."""

from __future__ import annotations

import pytest

from requeststate._bind_input import bind_input


@pytest.mark.parametrize(
    ("subject", "tool", "expected"),
    [
        ("", None, b""),
        ("alice", None, b"alice"),
        ("alice", "book", b"alice\0book"),
        ("", "book", b"\0book"),
        ("alice", "", b"alice\0"),
        ("é", "日", "é\0日".encode()),
    ],
    ids=["no binding", "subject only", "subject and tool", "tool only", "empty tool", "utf-8"],
)
def test_bind_input_of_each_binding_shape(subject: str, tool: str | None, expected: bytes) -> None:
    assert bind_input(subject, tool) == expected


@pytest.mark.parametrize(("subject", "tool"), [("a\0b", None), ("a", "b\0c"), ("\0", ""), ("", "\0")])
def test_bind_input_refuses_the_separator_in_either_part(subject: str, tool: str | None) -> None:
    # Otherwise ("a\0b", None) and ("a", "b") would share a tag.
    with pytest.raises(ValueError, match=r"^subject and tool must not contain U\+0000$"):
        bind_input(subject, tool)


@pytest.mark.parametrize(("subject", "tool"), [("\ud800", None), ("a", "\udfff"), ("\udc00", "")])
def test_bind_input_refuses_lone_surrogates(subject: str, tool: str | None) -> None:
    with pytest.raises(ValueError, match=r"^subject and tool must be valid Unicode \(no lone surrogates\)$"):
        bind_input(subject, tool)


@pytest.mark.parametrize(
    ("subject", "tool"),
    [(None, None), (b"alice", None), ("alice", 5), ("alice", b"book"), (["alice"], None)],
    ids=["None subject", "bytes subject", "int tool", "bytes tool", "list subject"],
)
def test_bind_input_refuses_what_is_not_a_str(subject: object, tool: object) -> None:
    with pytest.raises(TypeError, match=r"^subject must be a str and tool a str or None$"):
        bind_input(subject, tool)


@pytest.mark.parametrize("subject", ["{", '{"s":"x"}', ' {"s"', "\t\r\n{", "\n\n {}"])
def test_bind_input_refuses_a_subject_alone_that_reads_as_a_payload(subject: str) -> None:
    # Its tag would be a valid v1. MAC of that payload: a forgery for any identity.
    with pytest.raises(
        ValueError,
        match=r"^a subject bound without a tool must not start with '\{' \(it would read as a payload\)$",
    ):
        bind_input(subject, None)


@pytest.mark.parametrize(
    ("subject", "tool"),
    [("{", ""), ('{"s":"x"}', "book"), ("\f{", None), ("\u00a0{", None), ("x{", None), ("}", None)],
    ids=["with empty tool", "with a tool", "form feed", "no-break space", "brace later", "closing brace"],
)
def test_bind_input_allows_a_brace_that_no_payload_can_start_with(subject: str, tool: str | None) -> None:
    # With a tool the input holds U+0000, which no payload does; and JSON
    # whitespace is only space, tab, CR and LF.
    assert bind_input(subject, tool) == subject.encode() + (b"" if tool is None else b"\0" + tool.encode())


class Labelled(str):
    """A str whose format is not its content, as a (str, Enum) member's is on 3.12+."""

    __slots__ = ()

    def __format__(self, spec: str) -> str:
        return "label:" + str.__str__(self)


def test_a_str_subclass_is_bound_by_its_content() -> None:
    # An f-string used its __format__ while the bind-tag cache matched by
    # content: the tag depended on what was cached, and was not the spec's.
    assert bind_input(Labelled("alice"), Labelled("book")) == b"alice\0book"
