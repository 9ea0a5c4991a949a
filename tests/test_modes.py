"""The mode registry: names to wire formats, and a token's prefix to its mode."""

from __future__ import annotations

import pytest

import requeststate as rs
from requeststate._encrypted import ENCRYPTED, XCHACHA
from requeststate._modes import WireMode, wire_for, wire_modes
from requeststate._signed import SIGNED

EVERY_WIRE: tuple[WireMode, ...] = (SIGNED, ENCRYPTED, XCHACHA)


@pytest.mark.parametrize(
    ("token", "mode"),
    [
        ("v1.e30.AAAA", rs.Mode.SIGNED),
        ("v1e.AAAA", rs.Mode.ENCRYPTED),
        ("v1x.AAAA", rs.Mode.XCHACHA),
        ("v1e", None),
        ("v2.AAAA", None),
        ("V1.AAAA", None),
        ("", None),
        ("AAAA", None),
    ],
)
def test_mode_of_a_token_is_the_mode_its_prefix_names(token: str, mode: rs.Mode | None) -> None:
    assert rs.Mode.of(token) is mode


@pytest.mark.parametrize(
    ("name", "wire"),
    [("signed", SIGNED), ("encrypted", ENCRYPTED), ("xchacha", XCHACHA), (rs.Mode.XCHACHA, XCHACHA)],
)
def test_each_mode_name_is_its_wire_format(name: rs.ModeSpec, wire: object) -> None:
    assert wire_modes(name) == ((rs.Mode(name),), (wire,))


def test_wire_modes_keeps_the_order_and_drops_repeats() -> None:
    assert wire_modes(("xchacha", rs.Mode.SIGNED, "xchacha")) == (
        (rs.Mode.XCHACHA, rs.Mode.SIGNED),
        (XCHACHA, SIGNED),
    )


@pytest.mark.parametrize(
    ("modes", "message"),
    [
        ("SIGNED", r"^mode must be a Mode or one of 'signed', 'encrypted', 'xchacha', got 'SIGNED'$"),
        ("v1.", r"^mode must be a Mode or one of 'signed', 'encrypted', 'xchacha', got 'v1.'$"),
        ((), r"^mode must name at least one Mode$"),
    ],
    ids=["upper case", "a prefix", "empty tuple"],
)
def test_an_unknown_mode_is_refused_listing_the_choices(modes: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        wire_modes(modes)


@pytest.mark.parametrize(
    ("modes", "kind"),
    [(None, "NoneType"), (["signed"], "list"), (("signed", 1), "int"), (b"signed", "bytes")],
    ids=["None", "a list", "a tuple with a stranger", "bytes"],
)
def test_a_mode_of_another_type_is_a_type_error_listing_the_choices(modes: object, kind: str) -> None:
    # Before: a ValueError, where every other option of the wrong type raises TypeError.
    message = rf"^mode must be a Mode or one of 'signed', 'encrypted', 'xchacha', not {kind}$"
    with pytest.raises(TypeError, match=message):
        wire_modes(modes)


@pytest.mark.parametrize("wires", [EVERY_WIRE, EVERY_WIRE[::-1]], ids=["in order", "reversed"])
@pytest.mark.parametrize(
    ("token", "wire"),
    [("v1.x", SIGNED), ("v1e.x", ENCRYPTED), ("v1x.x", XCHACHA), ("v1.", SIGNED), ("v1e.", ENCRYPTED)],
)
def test_wire_for_finds_the_wire_of_a_tokens_prefix_among_all(
    token: str, wire: WireMode, wires: tuple[WireMode, ...]
) -> None:
    # In any order: a prefix that started another would go to whichever came first.
    assert wire_for(token, wires) is wire


@pytest.mark.parametrize(
    ("token", "wires"),
    [
        ("v1.x", (ENCRYPTED, XCHACHA)),
        ("v1e.x", (SIGNED,)),
        ("v1x.x", (SIGNED, ENCRYPTED)),
        ("v1e..", (SIGNED,)),
        ("v1..", (ENCRYPTED,)),
        ("v1x." + "A" * 100_000, (SIGNED,)),
    ],
)
def test_another_known_prefix_is_wrong_mode(token: str, wires: tuple[WireMode, ...]) -> None:
    with pytest.raises(rs.InvalidToken, match=r"^wrong_mode$"):
        wire_for(token, wires)


@pytest.mark.parametrize(
    "token",
    [
        "v9.x",
        "v1",
        "v1e",
        "v1x",
        "v1ex",
        "v1e-",
        "v1e?AAAA",
        ".v1.",
        ".v1e.x",
        "x.v1e.x",
        "v1xe.abc",
        "V1.abc",
        "v1e" + "A" * 100 + ".x",
        "",
    ],
)
def test_a_prefix_that_is_no_modes_is_malformed(token: str) -> None:
    with pytest.raises(rs.InvalidToken, match=r"^malformed$"):
        wire_for(token, EVERY_WIRE)
