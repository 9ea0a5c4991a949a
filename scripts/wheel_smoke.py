"""Build the package as a user gets it, check it, and use it from a fresh venv (``make wheel-smoke``).

``uv build`` (the sdist, then the wheel built from it, each in an isolated environment, as ``python
-m build`` does), ``twine check --strict``, ``check-wheel-contents``, then the wheel alone (no
extras) installed into a new venv under ``build/wheel-smoke/`` and ``scripts/smoke_installed.py``
run there, isolated from this checkout. Exit 1 at the first step that fails.

The uv is the Makefile's (``--uv``: the version pyproject.toml pins): ``python -m build`` and
``python -m venv`` with pip took 30 s of make test, uv takes under 10.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "build" / "wheel-smoke"


def step(title: str, *command: str | Path, cwd: Path = ROOT) -> None:
    print(f"wheel-smoke: {title}", flush=True)
    done = subprocess.run([str(part) for part in command], cwd=cwd, check=False)  # noqa: S603 (our own tools)
    if done.returncode != 0:
        raise SystemExit(f"wheel-smoke: FAILED at: {title}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uv", type=Path, required=True, help="the uv that builds and installs")
    uv = parser.parse_args().uv
    shutil.rmtree(WORK, ignore_errors=True)
    dist = WORK / "dist"
    step("uv build", uv, "build", "--quiet", "--out-dir", dist, ROOT)
    wheels = sorted(dist.glob("*.whl"))
    archives = [*wheels, *sorted(dist.glob("*.tar.gz"))]
    if len(wheels) != 1 or len(archives) != 2:
        raise SystemExit(f"wheel-smoke: expected one wheel and one sdist, got {[p.name for p in archives]}")
    step("twine check --strict", sys.executable, "-m", "twine", "check", "--strict", *archives)
    step("check-wheel-contents", sys.executable, "-m", "check_wheel_contents", wheels[0])
    venv = WORK / "venv"
    step("a fresh venv", uv, "venv", "--quiet", "--python", sys.executable, venv)
    python = venv / "bin" / "python"
    step("install the wheel (no extras)", uv, "pip", "install", "--quiet", "--python", python, wheels[0])
    # -I: neither this checkout nor the user's site-packages is on sys.path; a
    # temporary working directory holds no benchmarks package either.
    script = ROOT / "scripts" / "smoke_installed.py"
    with tempfile.TemporaryDirectory() as elsewhere:
        step("the smoke test, from the installed wheel", python, "-I", script, cwd=Path(elsewhere))
    print("wheel-smoke: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
