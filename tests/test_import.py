"""``import requeststate`` loads nothing a call may not need."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import requeststate


def loaded_after_import(module: str) -> bool:
    # A fresh interpreter: this one has long since imported everything.
    code = f"import sys, requeststate; print({module!r} in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.strip() == "True"


@pytest.mark.parametrize(
    "module",
    [
        "asyncio",  # only the async twins and the async guards await anything
        "nacl",  # PyNaCl serves only v1x.: loaded when such a token is first sealed or opened
    ],
)
def test_import_requeststate_does_not_load(module: str) -> None:
    assert not loaded_after_import(module)


def _imported_at_module_level(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import):
            names.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.partition(".")[0])
    return names


def test_no_module_of_the_package_imports_inspect_when_loaded() -> None:
    # msgspec loads inspect itself (through typing_extensions), so a fresh
    # interpreter cannot tell ours apart: read our own imports instead.
    package = Path(requeststate.__file__).parent
    core = sorted(package.glob("_*.py"))
    assert len(core) >= 10
    assert [path.name for path in core if "inspect" in _imported_at_module_level(path)] == []


def test_the_check_sees_a_module_the_import_does_load() -> None:
    # The probe itself works: msgspec is loaded by every import of requeststate.
    assert loaded_after_import("msgspec")
