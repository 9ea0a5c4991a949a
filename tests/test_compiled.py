"""The build under test: the modules pyproject.toml compiles, compiled exactly when the run says so.

``scripts.matrix`` sets ``REQUESTSTATE_EXPECT_BUILD=compiled`` for its runs of
the compiled wheel (``pure`` where it tests the pure wheel instead); every
other run (``make test``'s own, the floors) tests the pure-Python sources. A
compiled run that quietly imported the sources, or a wheel missing a compiled
module, fails here rather than passing on code that does not ship.
"""

from __future__ import annotations

import importlib
import os
import tomllib
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import pytest

from scripts.compiled import build_env

ROOT = Path(__file__).resolve().parent.parent
HOOK = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"][
    "hooks"
]["mypyc"]
COMPILED = tuple(sorted(path.strip("/").removesuffix(".py").replace("/", ".") for path in HOOK["include"]))
EXPECTED = os.environ.get("REQUESTSTATE_EXPECT_BUILD", "pure")


def is_extension(module: str) -> bool:
    return str(importlib.import_module(module).__file__).endswith(tuple(EXTENSION_SUFFIXES))


def test_the_build_expected_is_one_we_know() -> None:
    assert EXPECTED in {"pure", "compiled"}


def test_the_compiled_modules_are_the_strict_core_and_what_it_calls_per_token() -> None:
    assert COMPILED == (
        "requeststate._base64",
        "requeststate._core",
        "requeststate._encrypted",
        "requeststate._envelope",
    )


def test_the_compiled_build_is_off_unless_asked_for() -> None:
    # An install from source (pip install ., a git checkout) needs no C compiler.
    assert HOOK["enable-by-default"] is False


@pytest.mark.parametrize("module", COMPILED)
def test_each_compiled_module_is_an_extension_module_exactly_in_a_compiled_run(module: str) -> None:
    assert is_extension(module) is (EXPECTED == "compiled")


@pytest.mark.parametrize(
    "module", ["requeststate._codec", "requeststate._payload", "requeststate._keys", "requeststate._signed"]
)
def test_the_other_modules_are_never_compiled(module: str) -> None:
    # _codec's public signatures and _payload's msgspec annotations must stay as written.
    assert is_extension(module) is False


# --- scripts/compiled.py: the environment each build is made in -----------------------


def test_a_pure_build_never_inherits_the_hook_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    # An exported switch once made wheel-smoke's "pure" wheel a compiled one.
    monkeypatch.setenv("HATCH_BUILD_HOOK_ENABLE_MYPYC", "1")
    assert "HATCH_BUILD_HOOK_ENABLE_MYPYC" not in build_env(compile_core=False)


def test_a_compiled_build_turns_the_hook_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HATCH_BUILD_HOOK_ENABLE_MYPYC", raising=False)
    assert build_env(compile_core=True)["HATCH_BUILD_HOOK_ENABLE_MYPYC"] == "1"
