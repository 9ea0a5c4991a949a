"""requeststate._bind: the bytes a bind tag covers, and every identity no token may carry."""

from __future__ import annotations

import pytest

import requeststate as rs
from requeststate._bind import bind_input
from tests.conftest import SECRET
from tests.support import reference as ref


@pytest.mark.parametrize(
    ("subject", "tool", "expected"),
    [
        ("", None, b""),
        ("alice", None, b"alice"),
        ("alice", "book", b"alice\0book"),
        ("", "book", b"\0book"),
        ("é", "日", "é\0日".encode()),
    ],
)
def test_bind_input_of_each_binding_shape(subject: str, tool: str | None, expected: bytes) -> None:
    assert bind_input(subject, tool) == expected


@pytest.mark.parametrize(("subject", "tool"), [("a\0b", None), ("a", "b\0c"), ("\0", "")])
def test_bind_input_refuses_the_separator(subject: str, tool: str | None) -> None:
    with pytest.raises(ValueError, match=r"^subject and tool must not contain U\+0000$"):
        bind_input(subject, tool)


@pytest.mark.parametrize(("subject", "tool"), [("\ud800", None), ("a", "\udfff")])
def test_bind_input_refuses_lone_surrogates(subject: str, tool: str | None) -> None:
    with pytest.raises(ValueError, match=r"^subject and tool must be valid Unicode \(no lone surrogates\)$"):
        bind_input(subject, tool)


@pytest.mark.parametrize(("subject", "tool"), [(None, None), (b"alice", None), ("alice", 5)])
def test_bind_input_refuses_non_str(subject: object, tool: object) -> None:
    with pytest.raises(TypeError, match=r"^subject must be a str and tool a str or None$"):
        bind_input(subject, tool)


@pytest.mark.parametrize("subject", ["{", '{"s":"x"}', ' {"s"', "\t\r\n{", "\n\n {}"])
def test_bind_input_refuses_a_subject_alone_that_reads_as_a_payload(subject: str) -> None:
    with pytest.raises(ValueError, match="must not start with '\\{'"):
        bind_input(subject, None)


@pytest.mark.parametrize(
    ("subject", "tool"),
    [("{", ""), ('{"s":"x"}', "book"), ("\f{", None), ("\u00a0{", None), ("x{", None), ("}", None)],
)
def test_bind_input_allows_a_brace_that_no_payload_can_start_with(subject: str, tool: str | None) -> None:
    # With a tool the input holds U+0000, which no payload does; and JSON
    # whitespace is only space, tab, CR and LF.
    assert bind_input(subject, tool).startswith(subject.encode())


def test_the_payload_rule_error_states_the_rule() -> None:
    with pytest.raises(
        ValueError,
        match=r"^a subject bound without a tool must not start with '\{' \(it would read as a payload\)$",
    ):
        bind_input("{", None)


class Labelled(str):
    """A str whose format is not its content, as a (str, Enum) member's is on 3.12+."""

    __slots__ = ()

    def __format__(self, spec: str) -> str:
        return "label:" + str.__str__(self)


def test_a_str_subclass_is_bound_by_its_content() -> None:
    # An f-string used its __format__ while the cache matched by content: the
    # tag depended on what was cached, and was not the spec's.
    assert bind_input("alice", Labelled("book")) == b"alice\0book"
    (bound,) = rs.KeyRing(SECRET).bound("alice", Labelled("book"))
    assert bound.bind_tag == ref.bind_tag(SECRET, "alice", "book")
