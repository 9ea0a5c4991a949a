"""Build the package as a user gets it, check it, and use it from a fresh venv (``make wheel-smoke``).

Twice: the pure-Python build (what ``pip install`` makes from source) and the
compiled build (``HATCH_BUILD_HOOK_ENABLE_MYPYC=1``, as release wheels are
meant to be built). Each time ``python -m build`` (sdist and wheel),
``twine check --strict``, ``check-wheel-contents``, then the wheel alone (no
extras) installed into a new venv under ``build/wheel-smoke/`` and
``scripts/smoke_installed.py`` run there, isolated from this checkout. Exit 1
at the first step that fails.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from scripts.compiled import build_env, cannot_compile

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "build" / "wheel-smoke"


BUILDS = {"pure": False, "compiled": True}
"""Each build by name, and whether it compiles the strict core."""


def step(title: str, *command: str | Path, cwd: Path = ROOT, env: dict[str, str] | None = None) -> None:
    print(f"wheel-smoke: {title}", flush=True)
    done = subprocess.run([str(part) for part in command], cwd=cwd, env=env, check=False)  # noqa: S603 (our own tools)
    if done.returncode != 0:
        raise SystemExit(f"wheel-smoke: FAILED at: {title}")


def smoke(build: str) -> None:
    work = WORK / build
    dist = work / "dist"
    env = build_env(compile_core=BUILDS[build])
    step(f"python -m build ({build})", sys.executable, "-m", "build", "--outdir", dist, ROOT, env=env)
    wheels = sorted(dist.glob("*.whl"))
    archives = [*wheels, *sorted(dist.glob("*.tar.gz"))]
    if len(wheels) != 1 or len(archives) != 2:
        raise SystemExit(f"wheel-smoke: expected one wheel and one sdist, got {[p.name for p in archives]}")
    step("twine check --strict", sys.executable, "-m", "twine", "check", "--strict", *archives)
    step("check-wheel-contents", sys.executable, "-m", "check_wheel_contents", wheels[0])
    venv = work / "venv"
    step("a fresh venv", sys.executable, "-m", "venv", venv)
    python = venv / "bin" / "python"
    step("pip install the wheel (no extras)", python, "-m", "pip", "install", "--quiet", wheels[0])
    # -I: neither this checkout nor the user's site-packages is on sys.path; a
    # temporary working directory holds no benchmarks package either.
    script = ROOT / "scripts" / "smoke_installed.py"
    with tempfile.TemporaryDirectory() as elsewhere:
        step("the smoke test, from the installed wheel", python, "-I", script, build, cwd=Path(elsewhere))


def main() -> int:
    shutil.rmtree(WORK, ignore_errors=True)
    for build in BUILDS:
        unbuilt = cannot_compile(Path(sys.executable)) if BUILDS[build] else None
        if unbuilt is not None:
            print(f"wheel-smoke: SKIPPED the {build} build: {unbuilt.upper()}", file=sys.stderr)
            continue
        smoke(build)
    print("wheel-smoke: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
