from __future__ import annotations

import traceback

import pytest

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
        "outside_memory",
        "in_progress",
        "outcome_unknown",
        "answer_too_large",
    }


def crash_line(error: BaseException) -> str:
    """The last line of the traceback that a crash or a ``logger.exception`` prints for ``error``."""
    try:
        raise error
    except Exception:
        return traceback.format_exc().splitlines()[-1]


@pytest.mark.parametrize(
    ("error", "line"),
    [
        (rs.InvalidToken(rs.Reason.REPLAYED), "requeststate.InvalidToken: replayed"),
        (rs.GuardUnavailable("Redis did not answer"), "requeststate.GuardUnavailable: Redis did not answer"),
        (rs.KeyBudgetExhausted("rotate"), "requeststate.KeyBudgetExhausted: rotate"),
    ],
    ids=["InvalidToken", "GuardUnavailable", "KeyBudgetExhausted"],
)
def test_a_public_error_is_printed_as_requeststates_own_never_a_private_modules(
    error: Exception, line: str
) -> None:
    assert crash_line(error) == line
