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
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parent.parent.parent
SUITE_FILES = ("server/test_request_state.py", "server/test_request_state_boundary.py")
_LEFT_OUT = ("conftest.py", "server/conftest.py")


def sdk_suite(cache: Path = ROOT / ".cache") -> Path:
    """The directory holding ``sdk_tests/``, fetched on first use; ``RuntimeError`` if pip cannot."""
    version = importlib.metadata.version("mcp")
    home = cache / f"mcp-{version}-tests"
    if (home / "sdk_tests" / SUITE_FILES[0]).exists():
        return home
    cache.mkdir(parents=True, exist_ok=True)
    # Scratch beside home: the finished copy is renamed into place, on one file system.
    with tempfile.TemporaryDirectory(dir=cache) as scratch:
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
        staging = Path(scratch) / "staging"
        with tarfile.open(archives[0]) as archive:
            # Each regular file's bytes, written where we say: no extraction filter needed (tarfile's
            # filter= is missing before Python 3.11.4), and no member can write outside staging.
            for member in archive.getmembers():
                relative = PurePosixPath(member.name.removeprefix(prefix))
                if not member.name.startswith(prefix) or not member.isfile() or ".." in relative.parts:
                    continue
                source = archive.extractfile(member)
                assert source is not None, member.name  # a regular file has contents
                target = staging / "sdk_tests" / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(source.read())
        for name in _LEFT_OUT:
            (staging / "sdk_tests" / name).unlink(missing_ok=True)
        if home.exists() and not (home / "sdk_tests" / SUITE_FILES[0]).exists():
            shutil.rmtree(home)  # an earlier run's copy, left half written
        try:
            # Atomic: another test worker that fetched at the same time finds the copy whole or absent.
            staging.rename(home)
        except OSError:
            if not (home / "sdk_tests" / SUITE_FILES[0]).exists():
                raise
    return home
