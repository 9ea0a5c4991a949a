from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import requeststate as rs


def test_all_names_the_public_surface() -> None:
    assert set(rs.__all__) == {
        "DEFAULT_MAX_TOKEN_BYTES",
        "DEFAULT_TTL",
        "MAX_JSON_DEPTH",
        "MAX_TTL",
        "AsyncGuard",
        "Codec",
        "CodecOptions",
        "Guard",
        "GuardUnavailable",
        "InvalidToken",
        "KeyBudgetExhausted",
        "KeyRing",
        "Keys",
        "MemoryGuard",
        "Mode",
        "ModeName",
        "ModeSpec",
        "Modes",
        "Reason",
        "decode",
        "encode",
        "minted_at",
        "verify",
    }


def test_package_is_typed() -> None:
    assert (Path(rs.__file__).parent / "py.typed").is_file()


FUNCTIONS = (rs.encode, rs.decode, rs.verify)
CODEC_METHODS = (rs.Codec.encode, rs.Codec.decode, rs.Codec.verify, rs.Codec.adecode, rs.Codec.averify)


def test_token_and_keys_are_positional_only_and_options_keyword_only() -> None:
    for function in FUNCTIONS:
        kinds = [p.kind for p in inspect.signature(function).parameters.values()]
        assert kinds[:2] == [inspect.Parameter.POSITIONAL_ONLY] * 2, function.__name__
        assert set(kinds[2:]) == {inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.VAR_KEYWORD}


def test_mode_is_required_on_both_sides() -> None:
    for function in FUNCTIONS:
        assert inspect.signature(function).parameters["mode"].default is inspect.Parameter.empty


def test_codec_methods_take_the_token_positionally_and_the_rest_by_keyword() -> None:
    for method in CODEC_METHODS:
        kinds = [p.kind for p in inspect.signature(method).parameters.values()]
        assert kinds[:2] == [inspect.Parameter.POSITIONAL_ONLY] * 2, (
            method.__name__
        )  # self, the token or state
        assert set(kinds[2:]) == {inspect.Parameter.KEYWORD_ONLY}, method.__name__


def test_public_functions_classes_and_codec_methods_have_docstrings() -> None:
    public = [getattr(rs, name) for name in rs.__all__]
    documented: list[Any] = [v for v in public if inspect.isfunction(v) or inspect.isclass(v)]
    documented += [*CODEC_METHODS, rs.Codec.from_env, rs.KeyRing.from_env, rs.KeyRing.bound]
    assert len(documented) == 23  # 11 classes, 4 functions, 5 Codec methods, 2 from_env, bound
    assert [v.__qualname__ for v in documented if not inspect.getdoc(v)] == []
