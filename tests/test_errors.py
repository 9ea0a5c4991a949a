from __future__ import annotations

import requeststate as rs


def test_invalid_token_message_is_the_reason_code_alone() -> None:
    error = rs.InvalidToken(rs.Reason.EXPIRED)
    assert str(error) == "expired"
    assert error.args == ("expired",)


def test_invalid_token_carries_its_reason() -> None:
    assert rs.InvalidToken(rs.Reason.WRONG_MODE).reason is rs.Reason.WRONG_MODE


def test_reason_prints_as_its_code() -> None:
    assert str(rs.Reason.BAD_SIGNATURE) == "bad_signature"
    assert f"{rs.Reason.TOO_LARGE}" == "too_large"


def test_reasons_are_a_closed_set() -> None:
    assert {reason.value for reason in rs.Reason} == {
        "malformed",
        "too_large",
        "wrong_mode",
        "bad_signature",
        "expired",
        "wrong_binding",
        "wrong_type",
        "replayed",
        "guard_unavailable",
    }
