"""requeststate._payload: the payload's strict JSON, written and parsed; typed states; nesting bounds."""

from __future__ import annotations

import json

import msgspec
import pytest

import requeststate as rs
from requeststate._options import INT64_MAX, INT64_MIN
from requeststate._payload import (
    MAX_JSON_DEPTH,
    Payload,
    _has_duplicate_member,
    build_payload,
    read_state,
    too_deep,
)
from requeststate._payload import parse_payload as parse_strictly

TAG = "0" * 63 + "1"


def payload_bytes(**members: object) -> bytes:
    return json.dumps(members, separators=(",", ":")).encode()


def parse_payload(raw: bytes) -> Payload | rs.Reason:
    """The payload, or the reason it is refused."""
    try:
        return parse_strictly(raw)
    except rs.InvalidToken as refused:
        return refused.reason


def test_build_writes_compact_json_in_spec_order() -> None:
    assert build_payload("x", 5, TAG) == b'{"s":"x","exp":5,"b":"' + TAG.encode() + b'"}'


def test_build_writes_non_ascii_as_utf8() -> None:
    assert "é".encode() in build_payload("é", 5, TAG)


def test_parse_reads_what_build_writes() -> None:
    assert parse_payload(build_payload("state", 7, TAG)) == Payload("state", 7, TAG)


def test_parse_accepts_members_in_any_order_and_extra_members() -> None:
    raw = b'{"b":"' + TAG.encode() + b'","x":[1,{"y":null}],"exp":7, "s":"state"}'
    assert parse_payload(raw) == Payload("state", 7, TAG)


@pytest.mark.parametrize("exp", [INT64_MIN, INT64_MAX])
def test_parse_accepts_the_int64_bounds(exp: int) -> None:
    assert parse_payload(payload_bytes(s="", exp=exp, b=TAG)) == Payload("", exp, TAG)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"s":"a","s":"b","exp":1,"b":"' + TAG.encode() + b'"}',
        b'{"s":"a","exp":1,"b":"' + TAG.encode() + b'","x":{"y":1,"y":2}}',
        b'{"s":"a","\\u0065xp":1,"exp":1,"b":"' + TAG.encode() + b'"}',
    ],
    ids=["top level", "nested in an extra member", "spelled with an escape"],
)
def test_parse_refuses_duplicate_member_names(raw: bytes) -> None:
    assert parse_payload(raw) is rs.Reason.MALFORMED


def test_parse_refuses_nesting_too_deep_to_follow() -> None:
    deep = b"[" * 5000 + b"]" * 5000
    raw = b'{"s":"a","exp":1,"b":"' + TAG.encode() + b'","x":' + deep + b"}"
    assert parse_payload(raw) is rs.Reason.MALFORMED


def _with_member_nested(depth: int) -> bytes:
    # The payload object is one level; its extra member adds depth - 1 more.
    inner = b"[" * (depth - 1) + b"]" * (depth - 1)
    return b'{"s":"a","exp":1,"b":"' + TAG.encode() + b'","x":' + inner + b"}"


def test_parse_accepts_a_payload_nested_to_the_depth_limit() -> None:
    assert isinstance(parse_payload(_with_member_nested(MAX_JSON_DEPTH)), Payload)


def test_parse_refuses_a_payload_nested_one_past_the_depth_limit() -> None:
    # Explicit, so every Python agrees: 3.13 follows nesting that 3.11 cannot.
    assert parse_payload(_with_member_nested(MAX_JSON_DEPTH + 1)) is rs.Reason.MALFORMED


@pytest.mark.parametrize(
    ("text", "deep"),
    [
        ("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH, False),
        ("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1), True),
        ('{"a":' * (MAX_JSON_DEPTH + 1) + "1" + "}" * (MAX_JSON_DEPTH + 1), True),
        ('["' + "[" * 500 + '"]', False),
        ('["\\"' + ",[]" * 500 + ',""[[[["]', False),
        ("[]" * 500, False),
        ("[" * 200 + "é" + "]" * 200, True),
        ("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH + "[]", False),
        ('"' + "[" * 200 + '"', False),
    ],
    ids=[
        "at-limit",
        "past-limit",
        "objects",
        "brackets-in-a-string",
        "escaped-quotes",
        "wide",
        "non-ascii",
        "at-limit-and-scanned",
        "all-in-one-string",
    ],
)
def test_too_deep_counts_nesting_outside_strings(text: str, deep: bool) -> None:
    assert too_deep(text) is deep


@pytest.mark.parametrize("document", [b"{", b"\xff"])
def test_duplicate_scan_fails_closed_where_it_cannot_parse(document: bytes) -> None:
    assert _has_duplicate_member(document)


def test_duplicate_scan_passes_names_repeated_only_in_distinct_objects() -> None:
    assert _has_duplicate_member(b'{"a":{"a":1},"b":[{"a":1},{"a":2}]}') is False


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"null",
        b"[]",
        b'{"s":"\xc3","exp":1,"b":"' + TAG.encode() + b'"}',
        b'{"s":"\xed\xa0\x80","exp":1,"b":"' + TAG.encode() + b'"}',
        b'\xef\xbb\xbf{"s":"x","exp":1,"b":"' + TAG.encode() + b'"}',
        b'{"s":"x","exp":NaN,"b":"' + TAG.encode() + b'"}',
        b'{"s":"x","exp":01,"b":"' + TAG.encode() + b'"}',
    ],
    ids=["empty", "null", "array", "truncated UTF-8", "encoded surrogate", "BOM", "NaN", "leading zero"],
)
def test_parse_refuses_what_is_not_a_strict_utf8_json_object(raw: bytes) -> None:
    assert parse_payload(raw) is rs.Reason.MALFORMED


def test_build_surrogate_error_states_the_rule() -> None:
    with pytest.raises(ValueError, match=r"^state must be valid Unicode \(no lone surrogates\)$"):
        build_payload("\ud800", 1, TAG)


def test_parse_refuses_bytes_that_are_not_utf8_in_an_unknown_member() -> None:
    # msgspec skips an unknown member without reading it as UTF-8; found by the fuzz corpus.
    raw = b'{"s":"a","exp":1,"b":"' + TAG.encode() + b'","x":"\xdb"}'
    assert parse_payload(raw) is rs.Reason.MALFORMED


def test_too_deep_does_not_count_characters_outside_the_brackets() -> None:
    # Non-ASCII characters outside a string are not JSON; they must not add depth.
    # One pair more than the limit, so the text is scanned, not settled by counting.
    text = "[" * MAX_JSON_DEPTH + "é" * 5 + "]" * MAX_JSON_DEPTH + "[]"
    assert too_deep(text) is False


def test_duplicate_scan_answers_false_for_distinct_names() -> None:
    assert _has_duplicate_member(b'{"a":1,"b":2}') is False


class Step(msgspec.Struct):
    step: int


def test_a_typed_state_is_decoded_strictly() -> None:
    assert read_state('{"step":2}', Step) == Step(step=2)
    with pytest.raises(rs.InvalidToken, match=r"^wrong_type$"):
        read_state('{"step":"2"}', Step)


def test_a_typed_state_nested_past_the_limit_is_the_wrong_type_on_every_python() -> None:
    deep = "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1)
    with pytest.raises(rs.InvalidToken, match=r"^wrong_type$"):
        read_state(deep, list[object])
