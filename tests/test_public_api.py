from __future__ import annotations

import inspect
from pathlib import Path

import requeststate as rs


def test_all_names_the_public_surface() -> None:
    assert set(rs.__all__) == {
        "DEFAULT_MAX_TOKEN_BYTES",
        "DEFAULT_TTL",
        "MAX_JSON_DEPTH",
        "AsyncGuard",
        "Codec",
        "Guard",
        "GuardUnavailable",
        "InvalidToken",
        "KeyBudgetExhausted",
        "KeyRing",
        "Keys",
        "MemoryGuard",
        "Mode",
        "ModeName",
        "Modes",
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


def test_codec_methods_take_the_token_positionally_and_the_rest_by_keyword() -> None:
    for method in (rs.Codec.encode, rs.Codec.decode, rs.Codec.verify, rs.Codec.adecode, rs.Codec.averify):
        kinds = [p.kind for p in inspect.signature(method).parameters.values()]
        assert kinds[:2] == [inspect.Parameter.POSITIONAL_ONLY] * 2  # self, then the token or state
        assert set(kinds[2:]) == {inspect.Parameter.KEYWORD_ONLY}


def test_public_functions_and_classes_have_docstrings() -> None:
    public = [getattr(rs, name) for name in rs.__all__]
    documented = [v for v in public if inspect.isfunction(v) or inspect.isclass(v)]
    documented += [
        m for m in vars(rs.Codec).values() if inspect.isfunction(m) and not m.__name__.startswith("_")
    ]
    assert len(documented) >= 20
    assert [v.__qualname__ for v in documented if not inspect.getdoc(v)] == []
