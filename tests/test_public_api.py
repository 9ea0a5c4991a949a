from __future__ import annotations

import inspect
from pathlib import Path

import requeststate as rs


def test_all_names_the_public_surface() -> None:
    assert set(rs.__all__) == {
        "DEFAULT_MAX_TOKEN_BYTES",
        "DEFAULT_TTL",
        "AsyncGuard",
        "Guard",
        "GuardUnavailable",
        "InvalidToken",
        "KeyBudgetExhausted",
        "KeyRing",
        "MemoryGuard",
        "Mode",
        "Reason",
        "adecode",
        "averify",
        "decode",
        "encode",
        "verify",
    }


def test_package_is_typed() -> None:
    assert (Path(rs.__file__).parent / "py.typed").exists()


def test_token_and_keys_are_positional_only_and_options_keyword_only() -> None:
    for function in (rs.encode, rs.decode, rs.verify, rs.adecode, rs.averify):
        kinds = [p.kind for p in inspect.signature(function).parameters.values()]
        assert kinds[:2] == [inspect.Parameter.POSITIONAL_ONLY] * 2
        assert set(kinds[2:]) == {inspect.Parameter.KEYWORD_ONLY}


def test_mode_is_required_on_both_sides() -> None:
    for function in (rs.encode, rs.decode, rs.verify, rs.adecode, rs.averify):
        assert inspect.signature(function).parameters["mode"].default is inspect.Parameter.empty


def test_public_callables_have_docstrings() -> None:
    for name in rs.__all__:
        value = getattr(rs, name)
        if callable(value):
            assert inspect.getdoc(value), name
