"""The compiled build, made as release wheels are meant to be, in a venv for our tests and benchmarks.

``python -m scripts.compiled --venv DIR [--group NAME ...] [--python PATH]``
(``make bench`` runs it; ``scripts.matrix`` uses it for its compiled runs):

1. a venv at DIR (from ``--python``, default this interpreter), made afresh
   when the interpreter, pyproject.toml or the groups change;
2. there, ``python -m build`` with ``HATCH_BUILD_HOOK_ENABLE_MYPYC=1``: the
   sdist, then the wheel from the sdist, so no compiled file lands in this
   checkout to shadow its sources; rebuilt when a source of the package changes;
3. the wheel installed with the ``mcp`` and ``redis`` extras and each group;
4. a ``.pth`` that puts this checkout after site-packages, so ``tests`` and
   ``benchmarks`` import from here while ``requeststate`` is the installed one,
   provided Python does not put the working directory first: ``make bench``
   runs with ``PYTHONSAFEPATH=1`` (which its subprocesses inherit), and
   ``scripts.matrix`` runs ``python -P -m pytest --import-mode=append``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXTRAS = "mcp,redis"
# What turns on the build hook of pyproject.toml's [tool.hatch.build.targets.wheel.hooks.mypyc].
_HOOK_SWITCH = "HATCH_BUILD_HOOK_ENABLE_MYPYC"


def _digest(*paths: Path, extra: str = "") -> str:
    digest = hashlib.sha256(extra.encode())
    for path in paths:
        digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _run(*command: str | Path, env: dict[str, str] | None = None) -> None:
    subprocess.run([str(part) for part in command], cwd=ROOT, env=env, check=True)  # noqa: S603 (our own tools)


def build_env(*, compile_core: bool) -> dict[str, str]:
    """This environment for ``python -m build``, with the mypyc hook on exactly when ``compile_core``.

    A pure build must not inherit the hook's switch from the caller's environment.
    """
    env = {name: value for name, value in os.environ.items() if name != _HOOK_SWITCH}
    if compile_core:
        env[_HOOK_SWITCH] = "1"
    return env


def cannot_compile(interpreter: Path) -> str | None:
    """Why the compiled build cannot be made for ``interpreter``, or ``None``: mypyc needs cc and Python.h."""
    if shutil.which("cc") is None:
        return "no C compiler (cc); scripts/c-compiler.sh installs gcc"
    include = subprocess.run(  # noqa: S603 (our own tools)
        [interpreter, "-c", "import sysconfig; print(sysconfig.get_paths()['include'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if not (Path(include) / "Python.h").is_file():
        return f"no Python.h in {include}; install that Python's headers (Debian: python3.X-dev)"
    return None


def prepare(
    venv: Path, groups: Sequence[str], interpreter: Path | None = None, *, compile_core: bool = True
) -> Path:
    """The venv's python, with this checkout's wheel installed: compiled, or pure if not ``compile_core``.

    Raises ``subprocess.CalledProcessError`` when a step fails, and
    ``ValueError`` when the build made no wheel or several.
    """
    venv = venv.resolve()
    python = venv / "bin" / "python"
    pip = (python, "-m", "pip", "install", "--quiet")
    base = Path(interpreter or sys.executable).resolve()
    dependencies = _digest(ROOT / "pyproject.toml", extra=repr((str(base), sorted(groups))))
    sources = _digest(*sorted((ROOT / "requeststate").rglob("*.py")), extra=f"{dependencies} {compile_core}")
    venv_stamp, wheel_stamp = venv / ".venv-built", venv / ".compiled"
    fresh = not (python.exists() and venv_stamp.exists() and venv_stamp.read_text() == dependencies)
    if not fresh and wheel_stamp.exists() and wheel_stamp.read_text() == sources:
        return python
    if fresh:
        shutil.rmtree(venv, ignore_errors=True)
        _run(interpreter or sys.executable, "-m", "venv", venv)
        _run(*pip, "--upgrade", "pip>=25.1", "build>=1.2")  # pip 25.1 reads dependency groups
    dist = venv / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    _run(python, "-m", "build", "--outdir", dist, ROOT, env=build_env(compile_core=compile_core))
    (wheel,) = dist.glob("*.whl")
    if fresh:
        _run(*pip, f"requeststate[{EXTRAS}] @ {wheel.as_uri()}", *(f"--group={group}" for group in groups))
        venv_stamp.write_text(dependencies)
    else:  # the same version, rebuilt: replace it alone
        _run(*pip, "--force-reinstall", "--no-deps", wheel)
    (site_packages,) = venv.glob("lib/python3.*/site-packages")
    # After site-packages, never before: the installed requeststate comes first.
    (site_packages / "requeststate-checkout.pth").write_text(f"{ROOT}\n")
    wheel_stamp.write_text(sources)
    return python


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.compiled", description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", type=Path, required=True, help="where the venv goes")
    parser.add_argument("--group", action="append", default=[], help="a dependency group to install too")
    parser.add_argument("--python", type=Path, help="the interpreter to build for (default: this one)")
    args = parser.parse_args(argv)
    unbuilt = cannot_compile(args.python or Path(sys.executable))
    if unbuilt is not None:
        print(f"compiled: cannot build the compiled build: {unbuilt}", file=sys.stderr)
        return 1
    print(f"compiled: the mypyc build of this checkout in {args.venv}", flush=True)
    prepare(args.venv, args.group, args.python)
    return 0


if __name__ == "__main__":
    sys.exit(main())
