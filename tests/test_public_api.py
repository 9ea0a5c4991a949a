from __future__ import annotations
import __future__

import inspect
from pathlib import Path
from typing import Any

import requeststate as rs


def test_all_names_every_public_name_the_package_holds_and_no_other() -> None:
    # A name imported into the package but left out of __all__ (or listed but gone) fails here.
    held = {
        name
        for name, value in vars(rs).items()
        if not name.startswith("_")
        and not inspect.ismodule(value)
        and not isinstance(value, __future__._Feature)
    }
    assert held | {"__version__"} == set(rs.__all__)


def test_package_is_typed() -> None:
    assert (Path(rs.__file__).parent / "py.typed").is_file()


FUNCTIONS = (rs.encode, rs.decode, rs.verify)
CODEC_METHODS = (
    rs.Codec.encode,
    rs.Codec.open,
    rs.Codec.decode,
    rs.Codec.verify,
    rs.Codec.aopen,
    rs.Codec.adecode,
    rs.Codec.averify,
)
BY_KEYWORD = {inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.VAR_KEYWORD}


def test_token_and_keys_are_positional_only_and_options_keyword_only() -> None:
    for function in FUNCTIONS:
        kinds = [p.kind for p in inspect.signature(function).parameters.values()]
        assert kinds[:2] == [inspect.Parameter.POSITIONAL_ONLY] * 2, function.__name__
        assert set(kinds[2:]) <= BY_KEYWORD, function.__name__


def test_codec_methods_take_the_token_positionally_and_the_rest_by_keyword() -> None:
    for method in CODEC_METHODS:
        kinds = [p.kind for p in inspect.signature(method).parameters.values()]
        # self, then the token or the state.
        assert kinds[:2] == [inspect.Parameter.POSITIONAL_ONLY] * 2, method.__name__
        assert set(kinds[2:]) <= BY_KEYWORD, method.__name__


def test_every_public_function_class_and_method_has_a_docstring() -> None:
    public = [getattr(rs, name) for name in rs.__all__]
    documented: list[Any] = [value for value in public if inspect.isfunction(value) or inspect.isclass(value)]
    for cls in [value for value in documented if inspect.isclass(value)]:
        documented += [
            member
            for name, member in vars(cls).items()
            if not name.startswith("_") and (inspect.isfunction(member) or isinstance(member, classmethod))
        ]
    assert [value.__qualname__ for value in documented if not inspect.getdoc(value)] == []
