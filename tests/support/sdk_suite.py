"""The SDK's own request-state tests, from the ``mcp`` sdist of the installed version (PyPI ships its tests).

Fetched once with pip (``pip download --no-binary``) into ``.cache/`` and
unpacked as the package ``sdk_tests`` (the SDK names it ``tests``, as we do).
Its two top-level conftests are left out: they wire logfire and blockbuster,
which the request-state tests do not use.
"""

from __future__ import annotations

import importlib.metadata
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
SUITE_FILES = ("server/test_request_state.py", "server/test_request_state_boundary.py")
_LEFT_OUT = ("conftest.py", "server/conftest.py")


def sdk_suite(cache: Path = ROOT / ".cache") -> Path:
    """The directory holding ``sdk_tests/``, fetched on first use; ``RuntimeError`` if pip cannot."""
    version = importlib.metadata.version("mcp")
    home = cache / f"mcp-{version}-tests"
    if (home / "sdk_tests" / SUITE_FILES[0]).exists():
        return home
    with tempfile.TemporaryDirectory() as scratch:
        fetched = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                f"mcp=={version}",
                "--no-binary",
                ":all:",
                "--no-deps",
                "--quiet",
                "--dest",
                scratch,
            ],
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
        archives = list(Path(scratch).glob("mcp-*.tar.gz"))
        if fetched.returncode != 0 or not archives:
            raise RuntimeError(f"pip could not fetch the mcp {version} sdist: {fetched.stderr[-500:]}")
        prefix = f"mcp-{version}/tests/"
        with tarfile.open(archives[0]) as archive:
            members = [m for m in archive.getmembers() if m.name.startswith(prefix) and m.isfile()]
            staging = Path(scratch) / "staging"
            for member in members:
                member.name = "sdk_tests/" + member.name[len(prefix) :]
                archive.extract(member, staging, filter="data")
        for name in _LEFT_OUT:
            (staging / "sdk_tests" / name).unlink(missing_ok=True)
        home.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(home, ignore_errors=True)
        shutil.move(staging, home)
    return home
