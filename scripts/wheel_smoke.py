"""Build the package as a user gets it, check it, and use it from a fresh venv (``make wheel-smoke``).

``python -m build`` (sdist and wheel), ``twine check --strict``,
``check-wheel-contents``, then the wheel alone (no extras) installed into a new
venv under ``build/wheel-smoke/`` and ``scripts/smoke_installed.py`` run there,
isolated from this checkout. Exit 1 at the first step that fails.
"""

from __future__ import annotations

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
    shutil.rmtree(WORK, ignore_errors=True)
    dist = WORK / "dist"
    step("python -m build", sys.executable, "-m", "build", "--outdir", dist, ROOT)
    wheels = sorted(dist.glob("*.whl"))
    archives = [*wheels, *sorted(dist.glob("*.tar.gz"))]
    if len(wheels) != 1 or len(archives) != 2:
        raise SystemExit(f"wheel-smoke: expected one wheel and one sdist, got {[p.name for p in archives]}")
    step("twine check --strict", sys.executable, "-m", "twine", "check", "--strict", *archives)
    step("check-wheel-contents", sys.executable, "-m", "check_wheel_contents", wheels[0])
    venv = WORK / "venv"
    step("a fresh venv", sys.executable, "-m", "venv", venv)
    python = venv / "bin" / "python"
    step("pip install the wheel (no extras)", python, "-m", "pip", "install", "--quiet", wheels[0])
    # -I: neither this checkout nor the user's site-packages is on sys.path; a
    # temporary working directory holds no benchmarks package either.
    script = ROOT / "scripts" / "smoke_installed.py"
    with tempfile.TemporaryDirectory() as elsewhere:
        step("the smoke test, from the installed wheel", python, "-I", script, cwd=Path(elsewhere))
    print("wheel-smoke: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
