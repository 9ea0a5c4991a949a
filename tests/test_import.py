"""``import requeststate`` loads nothing a call may not need."""

from __future__ import annotations

import subprocess
import sys

import pytest


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
        "inspect",  # and with it ast and dis, for two calls that never need them
        "asyncio",  # only the async twins and the async guards await anything
        "nacl",  # PyNaCl serves only v1x.: loaded when such a token is first sealed or opened
    ],
)
def test_import_requeststate_does_not_load(module: str) -> None:
    assert not loaded_after_import(module)


def test_the_check_sees_a_module_the_import_does_load() -> None:
    # The probe itself works: msgspec is loaded by every import of requeststate.
    assert loaded_after_import("msgspec")
