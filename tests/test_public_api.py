"""The public surface: its names, its typing marker, and how its calls take their arguments."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

import requeststate as rs
from tests.conftest import SECRET


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
        "verify",
    }


def test_package_is_typed() -> None:
    assert (Path(rs.__file__).parent / "py.typed").exists()


def test_the_mode_is_never_a_default_of_the_functions() -> None:
    with pytest.raises(TypeError, match=r"missing 1 required keyword-only argument: 'mode'"):
        rs.encode("state", SECRET)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"missing 1 required keyword-only argument: 'mode'"):
        rs.decode("v1.x", SECRET)  # type: ignore[call-arg]


def test_options_are_taken_by_keyword_only() -> None:
    with pytest.raises(TypeError, match=r"takes 2 positional arguments but 3 were given"):
        rs.encode("state", SECRET, "signed")  # type: ignore[call-arg]
    codec = rs.Codec(SECRET, mode="signed")
    with pytest.raises(TypeError, match=r"takes 2 positional arguments but 3 were given"):
        codec.encode("state", "alice")  # type: ignore[call-arg]


def test_an_option_misspelled_is_named_with_every_option() -> None:
    with pytest.raises(
        TypeError,
        match=r"^unexpected option\(s\) tll; "
        r"the options are clock, guard, leeway, max_token_bytes, metrics, ttl$",
    ):
        rs.encode("state", SECRET, mode="signed", tll=5)  # type: ignore[call-arg]


CODEC_METHODS = ("encode", "decode", "verify", "adecode", "averify", "from_env")


def test_every_public_class_function_and_codec_method_is_documented() -> None:
    public = [getattr(rs, name) for name in rs.__all__]
    documented = [value for value in public if inspect.isfunction(value) or inspect.isclass(value)]
    documented += [getattr(rs.Codec, name) for name in CODEC_METHODS]
    assert {"Codec", "encode", "KeyRing", "MemoryGuard"} <= {value.__name__ for value in documented}
    assert [value.__qualname__ for value in documented if not inspect.getdoc(value)] == []
