"""What a new user does first, run against an installed wheel (``python -m scripts.wheel_smoke`` runs it).

Run it with the venv's python and ``-I``, outside a checkout: each check
raises ``AssertionError`` saying what a user would have met.
"""

from __future__ import annotations

import base64
import importlib.metadata
import importlib.resources
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import requeststate as rs

RUNTIME = {"cryptography", "msgspec", "pynacl"}


def check_imported_from_the_wheel() -> None:
    where = Path(rs.__file__).resolve()
    assert "site-packages" in where.parts, f"requeststate was imported from {where}, not the installed wheel"


def check_round_trip_in_each_mode() -> None:
    keys = rs.KeyRing(os.urandom(32))
    for mode in rs.Mode:
        token = rs.encode('{"step":1}', keys, mode=mode, subject="alice", tool="book")
        state = rs.decode(token, keys, mode=mode, subject="alice", tool="book")
        assert state == '{"step":1}', f"{mode}: the round trip gave {state!r}"
        assert rs.decode(token, keys, mode=mode, subject="mallory", tool="book") is None, f"{mode}: not bound"


def console(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    script = shutil.which("requeststate", path=str(Path(sys.executable).parent))
    assert script is not None, "the requeststate console script is not installed"
    return subprocess.run(  # noqa: S603
        [script, *args], capture_output=True, text=True, timeout=60, check=False, env=env
    )


def check_version() -> None:
    done = console("--version")
    expected = f"requeststate {importlib.metadata.version('requeststate')}\n"
    assert done.stdout == expected, f"--version printed {done.stdout!r}, not {expected!r}"
    assert rs.__version__ == importlib.metadata.version("requeststate")


def check_bench_measures_from_the_wheel() -> None:
    # The package's own benchmark: no checkout, no repository file, the user's configuration.
    done = console("bench", "--mode", "signed,encrypted", "--seconds", "1", "--json")
    assert done.returncode == 0, f"bench exited {done.returncode}: {done.stderr}"
    report = json.loads(done.stdout)
    assert [row["mode"] for row in report["modes"]] == ["signed", "encrypted"], done.stdout
    guards = [(row["guard"], row["class"], row["path"]) for row in report["guards"]]
    assert guards == [("memory", "MemoryGuard", "sync"), ("memory", "MemoryGuard", "async")], done.stdout


def check_minted_token_verifies() -> None:
    secret = os.urandom(32)
    env = {**os.environ, "REQUESTSTATE_KEYS": base64.urlsafe_b64encode(secret).decode()}
    token = console("mint", '{"step":1}', "--subject", "alice", "--tool", "book", env=env).stdout.strip()
    assert rs.decode(token, secret, mode="encrypted", subject="alice", tool="book") == '{"step":1}', token
    done = console("inspect", token, "--subject", "alice", "--tool", "book", "--json", env=env)
    assert json.loads(done.stdout)["verified"] is True, done.stdout + done.stderr


def check_py_typed() -> None:
    assert importlib.resources.files("requeststate").joinpath("py.typed").is_file(), "no py.typed"


def check_probe_wordlist_ships() -> None:
    # The probe's guessed_key row reads its built-in secrets from this data file. (Importing
    # requeststate.probe needs the mcp extra, which this venv lacks: the file is found by path.)
    wordlist = importlib.resources.files("requeststate").joinpath("common_secrets.txt")
    assert wordlist.is_file(), (
        "requeststate/common_secrets.txt (the probe's and KeyRing's list) is not in the wheel"
    )
    lines = wordlist.read_text(encoding="utf-8").splitlines()
    assert len(lines) >= 100, f"the probe's wordlist holds {len(lines)} secrets, not 100 or more"


def check_runtime_dependencies() -> None:
    requires = importlib.metadata.requires("requeststate") or []
    unconditional = {line.split(">")[0].split("=")[0].strip().lower() for line in requires if ";" not in line}
    assert unconditional == RUNTIME, f"runtime dependencies are {sorted(unconditional)}"


def check_metadata() -> None:
    metadata = importlib.metadata.metadata("requeststate")
    assert metadata["License-Expression"] == "MIT", metadata["License-Expression"]
    assert metadata.get_all("License-File") == ["LICENSE"], metadata.get_all("License-File")
    # The project has no home yet: no URL may point at one nobody created.
    assert metadata.get_all("Project-URL") is None, metadata.get_all("Project-URL")


def check_extras_name_their_install() -> None:
    for module, extra in (
        ("requeststate.redis", "redis"),
        ("requeststate.postgres", "postgres"),
        ("requeststate.mcp", "mcp"),
    ):
        message = f"{module} imported without its extra installed"
        try:
            __import__(module)
        except ImportError as error:
            message = str(error)
        assert f"pip install 'requeststate[{extra}]'" in message, message


def main() -> int:
    checks = [
        check_imported_from_the_wheel,
        check_round_trip_in_each_mode,
        check_version,
        check_bench_measures_from_the_wheel,
        check_minted_token_verifies,
        check_py_typed,
        check_probe_wordlist_ships,
        check_runtime_dependencies,
        check_metadata,
        check_extras_name_their_install,
    ]
    for check in checks:
        check()
        print(f"smoke: {check.__name__}: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
