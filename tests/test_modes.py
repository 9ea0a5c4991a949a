from __future__ import annotations

import pytest

import requeststate as rs
from requeststate._encrypted import ENCRYPTED, XCHACHA
from requeststate._modes import MODE_BY_PREFIX, mode_of, modes_from_env, wire_for, wire_modes
from requeststate._signed import SIGNED


@pytest.mark.parametrize(
    ("token", "mode"),
    [
        ("v1.e30.AAAA", rs.Mode.SIGNED),
        ("v1e.AAAA", rs.Mode.ENCRYPTED),
        ("v1x.AAAA", rs.Mode.XCHACHA),
        ("v1e", None),
        ("v2.AAAA", None),
        ("", None),
    ],
)
def test_mode_of_names_the_mode_a_prefix_names(token: str, mode: rs.Mode | None) -> None:
    assert mode_of(token) is mode


def test_the_table_ties_each_prefix_to_its_wire_format() -> None:
    assert {prefix: wire_modes(mode)[1] for prefix, mode in MODE_BY_PREFIX.items()} == {
        "v1.": (SIGNED,),
        "v1e.": (ENCRYPTED,),
        "v1x.": (XCHACHA,),
    }


def test_wire_modes_keeps_the_order_and_drops_repeats() -> None:
    assert wire_modes(("xchacha", rs.Mode.SIGNED, "xchacha")) == (
        (rs.Mode.XCHACHA, rs.Mode.SIGNED),
        (XCHACHA, SIGNED),
    )


@pytest.mark.parametrize(
    ("token", "reason"),
    [
        ("v1.x", rs.Reason.WRONG_MODE),
        ("v1x.x", rs.Reason.WRONG_MODE),
        ("v9.x", rs.Reason.MALFORMED),
        ("v1", rs.Reason.MALFORMED),
    ],
)
def test_an_unexpected_prefix_is_wrong_mode_only_when_it_is_one_of_ours(
    token: str, reason: rs.Reason
) -> None:
    with pytest.raises(rs.InvalidToken) as refused:
        wire_for(token, (ENCRYPTED,))
    assert refused.value.reason is reason


def test_a_token_is_routed_to_the_mode_its_prefix_names_among_those_accepted() -> None:
    assert wire_for("v1x.AAAA", (ENCRYPTED, XCHACHA)) is XCHACHA
    assert wire_for("v1.AAAA.BBBB", (SIGNED,)) is SIGNED


def test_the_environment_names_one_mode_or_a_migration() -> None:
    assert modes_from_env({}, "signed") == "signed"
    assert modes_from_env({"REQUESTSTATE_MODE": " "}, "signed") == "signed"
    assert modes_from_env({"REQUESTSTATE_MODE": "xchacha"}, "signed") == ("xchacha",)
    assert modes_from_env({"REQUESTSTATE_MODE": "encrypted, signed"}, "xchacha") == ("encrypted", "signed")


@pytest.mark.parametrize("value", ["encryptd", "encrypted,", ",signed"])
def test_a_mode_the_environment_misspells_names_the_variable_and_the_fix(value: str) -> None:
    with pytest.raises(
        ValueError,
        match=r"^REQUESTSTATE_MODE must name modes among signed, encrypted, xchacha, .* "
        r"set it as REQUESTSTATE_MODE=encrypted, or REQUESTSTATE_MODE=encrypted,signed$",
    ):
        modes_from_env({"REQUESTSTATE_MODE": value}, "signed")
