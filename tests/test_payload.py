"""The payload ``{s, exp, b, id}``: written compact, read strictly (docs/wire-format.md, "Payload")."""

from __future__ import annotations

import json

import msgspec
import pytest

import requeststate as rs
from requeststate._bounds import INT64_MAX, INT64_MIN
from requeststate._payload import MAX_JSON_DEPTH, Payload, build_payload, parse_payload, read_state, too_deep

TAG = "0" * 63 + "1"
B = b'"b":"' + TAG.encode() + b'"'


def payload_bytes(**members: object) -> bytes:
    return json.dumps(members, separators=(",", ":")).encode()


def refused(raw: bytes) -> rs.Reason:
    with pytest.raises(rs.InvalidToken) as caught:
        parse_payload(raw)
    return caught.value.reason


class Step(msgspec.Struct):
    step: int


# --- writing --------------------------------------------------------------------------------------


def test_build_writes_compact_json_in_spec_order() -> None:
    assert build_payload("x", 5, TAG) == b'{"s":"x","exp":5,' + B + b"}"


def test_build_writes_the_token_id_last() -> None:
    assert build_payload("x", 5, TAG, "ab" * 16) == b'{"s":"x","exp":5,' + B + b',"id":"' + b"ab" * 16 + b'"}'


def test_build_writes_non_ascii_as_utf8() -> None:
    assert build_payload("é", 5, TAG) == '{"s":"é","exp":5,'.encode() + B + b"}"


def test_build_refuses_a_lone_surrogate_in_the_state() -> None:
    with pytest.raises(ValueError, match=r"^state must be valid Unicode \(no lone surrogates\)$"):
        build_payload("\ud800", 1, TAG)


# --- reading: what is accepted --------------------------------------------------------------------


def test_parse_reads_what_build_writes() -> None:
    assert parse_payload(build_payload("state", 7, TAG, "ab" * 16)) == Payload("state", 7, TAG, "ab" * 16)


def test_parse_reads_a_payload_without_an_id_as_mcp_d_writes_it() -> None:
    assert parse_payload(payload_bytes(s="state", exp=7, b=TAG)) == Payload("state", 7, TAG, None)


def test_parse_accepts_members_in_any_order_and_extra_members() -> None:
    raw = b'{"b":"' + TAG.encode() + b'","x":[1,{"y":null}],"exp":7, "s":"state"}'
    assert parse_payload(raw) == Payload("state", 7, TAG)


@pytest.mark.parametrize("exp", [INT64_MIN, INT64_MAX])
def test_parse_accepts_the_int64_bounds(exp: int) -> None:
    assert parse_payload(payload_bytes(s="", exp=exp, b=TAG)) == Payload("", exp, TAG)


@pytest.mark.parametrize(
    "b", ["G" * 64, "X" * 64, TAG.upper(), "é" * 64], ids=["G", "X", "upper", "non-ASCII"]
)
def test_parse_leaves_a_b_of_any_64_characters_to_the_binding_check(b: str) -> None:
    # Whatever its alphabet, a b that is not the bind tag is wrong_binding, decided later.
    assert parse_payload(payload_bytes(s="x", exp=1, b=b)) == Payload("x", 1, b)


@pytest.mark.parametrize("token_id", ["a", "a" * 64])
def test_parse_accepts_an_id_of_1_to_64_characters(token_id: str) -> None:
    assert parse_payload(payload_bytes(s="x", exp=1, b=TAG, id=token_id)).id == token_id


def _with_member_nested(depth: int) -> bytes:
    # The payload object is one level; its extra member adds depth - 1 more.
    inner = b"[" * (depth - 1) + b"]" * (depth - 1)
    return b'{"s":"a","exp":1,' + B + b',"x":' + inner + b"}"


def test_parse_accepts_a_payload_nested_to_the_depth_limit() -> None:
    assert parse_payload(_with_member_nested(MAX_JSON_DEPTH)) == Payload("a", 1, TAG)


# --- reading: what is refused, as malformed -------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"null",
        b"[]",
        b'"x"',
        b'{"s":"\xc3","exp":1,' + B + b"}",
        b'{"s":"\xed\xa0\x80","exp":1,' + B + b"}",
        b'\xef\xbb\xbf{"s":"x","exp":1,' + B + b"}",
        b'{"s":"x","exp":NaN,' + B + b"}",
        b'{"s":"x","exp":01,' + B + b"}",
        b'{"s":"x","exp":1,' + B + b"}x",
    ],
    ids=[
        "empty",
        "null",
        "array",
        "string",
        "truncated UTF-8",
        "encoded surrogate",
        "BOM",
        "NaN",
        "leading zero",
        "trailing garbage",
    ],
)
def test_parse_refuses_what_is_not_a_strict_utf8_json_object(raw: bytes) -> None:
    assert refused(raw) is rs.Reason.MALFORMED


@pytest.mark.parametrize(
    "members",
    [
        {"exp": 1, "b": TAG},
        {"s": "x", "b": TAG},
        {"s": "x", "exp": 1},
        {"s": 1, "exp": 1, "b": TAG},
        {"s": "x", "exp": True, "b": TAG},
        {"s": "x", "exp": 1.0, "b": TAG},
        {"s": "x", "exp": "1", "b": TAG},
        {"s": "x", "exp": INT64_MAX + 1, "b": TAG},
        {"s": "x", "exp": INT64_MIN - 1, "b": TAG},
        {"s": "x", "exp": 1, "b": TAG[:63]},
        {"s": "x", "exp": 1, "b": TAG + "0"},
        {"s": "x", "exp": 1, "b": 1},
        {"s": "x", "exp": 1, "b": TAG, "id": ""},
        {"s": "x", "exp": 1, "b": TAG, "id": "a" * 65},
        {"s": "x", "exp": 1, "b": TAG, "id": 7},
    ],
    ids=[
        "no s",
        "no exp",
        "no b",
        "s a number",
        "exp true",
        "exp a float",
        "exp a string",
        "exp past int64",
        "exp before int64",
        "b of 63",
        "b of 65",
        "b a number",
        "id empty",
        "id of 65",
        "id a number",
    ],
)
def test_parse_refuses_a_member_of_the_wrong_type_or_size(members: dict[str, object]) -> None:
    assert refused(payload_bytes(**members)) is rs.Reason.MALFORMED


@pytest.mark.parametrize(
    "raw",
    [
        b'{"s":"a","s":"b","exp":1,' + B + b"}",
        b'{"s":"a","exp":1,' + B + b',"x":{"y":1,"y":2}}',
        b'{"s":"a","\\u0065xp":1,"exp":1,' + B + b"}",
    ],
    ids=["top level", "nested in an extra member", "spelled with an escape"],
)
def test_parse_refuses_duplicate_member_names(raw: bytes) -> None:
    assert refused(raw) is rs.Reason.MALFORMED


def test_parse_refuses_nesting_too_deep_to_follow() -> None:
    assert refused(_with_member_nested(5000)) is rs.Reason.MALFORMED


def test_parse_refuses_a_payload_nested_one_past_the_depth_limit() -> None:
    # Explicit, so every Python agrees: 3.13 follows nesting that 3.11 cannot.
    assert refused(_with_member_nested(MAX_JSON_DEPTH + 1)) is rs.Reason.MALFORMED


def test_parse_refuses_bytes_that_are_not_utf8_in_an_unknown_member() -> None:
    # msgspec skips an unknown member without reading it as UTF-8; found by the fuzz corpus.
    assert refused(b'{"s":"a","exp":1,' + B + b',"x":"\xdb"}') is rs.Reason.MALFORMED


def test_parse_refuses_a_payload_the_duplicate_scan_cannot_read() -> None:
    # msgspec skips a 5,000-digit number; the standard library's scan refuses
    # it (int_max_str_digits), and what cannot be scanned is refused.
    assert refused(b'{"s":"a","exp":1,' + B + b',"x":' + b"1" * 5000 + b"}") is rs.Reason.MALFORMED


# --- the typed state ------------------------------------------------------------------------------


def test_read_state_decodes_the_requested_type() -> None:
    assert read_state('{"step":3}', Step) == Step(3)


@pytest.mark.parametrize("text", ['{"step":"3"}', "not json", '{"step":3', ""], ids=str)
def test_read_state_of_another_shape_is_wrong_type(text: str) -> None:
    with pytest.raises(rs.InvalidToken, match=r"^wrong_type$"):
        read_state(text, Step)


def test_read_state_reads_a_state_nested_to_the_depth_limit() -> None:
    expected: list[object] = []
    for _ in range(MAX_JSON_DEPTH - 1):
        expected = [expected]
    assert read_state("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH, list) == expected


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 5000])
def test_read_state_nested_past_the_depth_limit_is_wrong_type(depth: int) -> None:
    with pytest.raises(rs.InvalidToken, match=r"^wrong_type$"):
        read_state("[" * depth + "]" * depth, object)


# --- nesting depth --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "deep"),
    [
        ("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH, False),
        ("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1), True),
        ('{"a":' * (MAX_JSON_DEPTH + 1) + "1" + "}" * (MAX_JSON_DEPTH + 1), True),
        ("[{" * 65 + "}]" * 65, True),
        ('["' + "[" * 500 + '"]', False),
        ('["\\"' + ",[]" * 500 + ',""[[[["]', False),
        ("[]" * 500, False),
        ("[" * 200 + "é" + "]" * 200, True),
        ("[" * MAX_JSON_DEPTH + "é" * 5 + "]" * MAX_JSON_DEPTH, False),
        ("[" * 200, True),
        ('"' + "[" * 200 + '"', False),
        ("[]" * 10 + "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH, False),
        ("[]" * 100 + "[" * 100 + "é" * 40 + "]" * 100, False),
        ('["' + '\\"' * 1000 + "[" * 200, False),
    ],
    ids=[
        "at-limit",
        "past-limit",
        "objects",
        "mixed",
        "brackets-in-a-string",
        "escaped-quotes",
        "wide",
        "non-ascii",
        "non-ascii-at-limit",
        "unclosed",
        "only in a string",
        "at-limit-after-siblings",
        "non-ascii-among-many",
        "in a string that never ends",
    ],
)
def test_too_deep_counts_nesting_outside_strings(text: str, deep: bool) -> None:
    assert too_deep(text) is deep
