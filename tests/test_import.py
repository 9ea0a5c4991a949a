"""``import requeststate`` loads nothing a call may not need."""

from __future__ import annotations

import subprocess
import sys

import pytest

# What requeststate's dependencies load of themselves (an older msgspec or cryptography
# loads json): not ours to count.
DEPENDENCIES = (
    "import cryptography.hazmat.primitives.ciphers.aead, cryptography.hazmat.primitives.hmac, "
    "cryptography.hazmat.primitives.kdf.hkdf, msgspec.json"
)


@pytest.fixture(scope="module")
def loaded_by_import() -> frozenset[str]:
    # A fresh interpreter: this one has long since imported everything.
    code = (
        f"import sys; {DEPENDENCIES}; before = set(sys.modules); import requeststate; "
        "print(' '.join(sorted(set(sys.modules) - before)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    loaded = frozenset(done.stdout.split())
    # The control: requeststate's own modules are what the import loads, so an empty list
    # (a broken command) cannot pass the checks below.
    assert "requeststate._codec" in loaded
    return loaded


@pytest.mark.parametrize(
    "module",
    [
        "asyncio",  # only the async calls and the async guards await anything
        "nacl",  # PyNaCl serves only v1x.: loaded when such a token is first sealed or opened
        "opentelemetry",  # loaded when the first Codec is built, and only if installed
        "logging",  # only the rare warnings of a key's budget and a full guard log anything
        "json",  # only a payload that no writer of ours made is scanned for duplicate members
        "requeststate.redis",  # imported by guard_from_url when a URL names Redis
        "redis",
        "requeststate.sqlite",  # imported by guard_from_url when a URL names SQLite
        "sqlite3",
        "requeststate.postgres",  # imported by guard_from_url when a URL names PostgreSQL
        "psycopg",
    ],
)
def test_import_requeststate_does_not_load(loaded_by_import: frozenset[str], module: str) -> None:
    assert module not in loaded_by_import
