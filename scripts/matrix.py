"""Run the test suite on every Python the package claims, and once at its dependencies' lower bounds.

``python -m scripts.matrix [--only VERSION|floors|compiled ...]`` (``make matrix``; ``make test`` runs it).

- Each ``Programming Language :: Python :: 3.X`` classifier in pyproject.toml
  other than the Python running this script (``make test`` has just run the
  suite there, with coverage) gets a venv under ``.venv-matrix/`` with the
  package's compiled wheel (below), its ``mcp`` and ``redis`` extras and the
  ``test`` dependency group, then the whole suite. The interpreter is looked up in pyenv's versions
  (``$PYENV_ROOT``, default ``~/.pyenv``) and then on ``PATH``; a version with
  no interpreter is SKIPPED LOUDLY, named on stderr and in the summary, also
  under CI (the image may differ), never silently.
- ``floors``: on the lowest claimed Python, every dependency of the package and
  of those two extras pinned to its declared lower bound (``name>=X`` becomes
  ``name==X``), then the whole suite. A bound that fails here is a bound to raise.
- ``compiled``: on this Python, the compiled build (``scripts/compiled.py``:
  the wheel with the strict core compiled by mypyc), then the
  whole suite against it. The other versions' runs are compiled too, so the
  suite meets the pure-Python modules here and at the floors, and the compiled
  ones on every claimed Python. Each compiled run sets
  ``REQUESTSTATE_EXPECT_BUILD=compiled``, which ``tests/test_compiled.py`` checks.
  Where the build cannot be made (no C compiler, no ``Python.h``), the run
  says so loudly and tests the pure-Python wheel of that Python instead.

Venvs are reused while pyproject.toml is unchanged, and a wheel while the
package's sources are. Exit 1 if any run fails.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from scripts import compiled

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = ROOT / "pyproject.toml"
VENVS = ROOT / ".venv-matrix"
EXTRAS = ("mcp", "redis")
_CLASSIFIER = re.compile(r"Programming Language :: Python :: (3\.\d+)$")
_LOWER_BOUND = re.compile(r"^([A-Za-z0-9._-]+)(?:\[[^\]]*\])?\s*>=\s*([0-9][0-9.]*)")


@dataclass(frozen=True)
class Run:
    """One venv and what goes into it."""

    name: str
    version: str
    requirements: tuple[str, ...]
    """The pins ``pip install`` gets after ``--no-deps -e .`` (the sources); empty for a wheel run."""
    wheel: Literal["compiled", "pure"] | None
    """The wheel the suite runs against (``scripts/compiled.py``), or ``None`` for the sources."""


@dataclass(frozen=True)
class Outcome:
    name: str
    status: str  # "passed", "FAILED", "SKIPPED", or "main" for the Python make test ran first
    detail: str


def claimed_versions(project: dict[str, object]) -> list[str]:
    classifiers = project.get("classifiers", [])
    assert isinstance(classifiers, list)
    found = (_CLASSIFIER.match(str(line)) for line in classifiers)
    return sorted({m.group(1) for m in found if m}, key=lambda v: tuple(map(int, v.split("."))))


def lower_bounds(project: dict[str, object]) -> list[str]:
    """``name==floor`` for every runtime dependency and every dependency of the tested extras."""
    dependencies = list(project.get("dependencies", []))  # type: ignore[call-overload]
    extras = project.get("optional-dependencies", {})
    assert isinstance(extras, dict)
    for extra in EXTRAS:
        dependencies.extend(extras[extra])
    pins = []
    for requirement in dependencies:
        match = _LOWER_BOUND.match(requirement)
        if match is None:
            raise SystemExit(f"matrix: {requirement!r} declares no lower bound (name>=X): declare one")
        pins.append(f"{match.group(1)}=={match.group(2)}")
    return pins


def find_python(version: str) -> tuple[Path | None, list[str]]:
    """An interpreter for ``version`` (e.g. "3.12"), and where it was looked for."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    installed = sorted(
        pyenv.glob(f"{version}.*/bin/python{version}"),
        key=lambda path: tuple(int(p) for p in path.parts[-3].split(".") if p.isdigit()),
    )
    candidates = [*reversed(installed)]
    on_path = shutil.which(f"python{version}")
    if on_path:
        candidates.append(Path(on_path))
    for candidate in candidates:
        # A pyenv shim on PATH answers for versions it does not have: ask it.
        probe = subprocess.run(  # noqa: S603 (our own tools)
            [candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=False,
        )
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return candidate, []
    return None, [str(pyenv / f"{version}.*"), f"python{version} on PATH"]


def _pip(python: Path, *args: str) -> None:
    subprocess.run([python, "-m", "pip", "install", "--quiet", *args], cwd=ROOT, check=True)  # noqa: S603 (our own tools)


def prepare(run: Run, interpreter: Path) -> Path:
    """The run's venv, built, or reused while nothing it was built from has changed."""
    venv = VENVS / run.name
    if run.wheel is not None:
        return compiled.prepare(venv, ["test"], interpreter, compile_core=run.wheel == "compiled")
    python = venv / "bin" / "python"
    stamp = venv / ".installed"
    digest = hashlib.sha256(PYPROJECT.read_bytes() + repr(run).encode()).hexdigest()
    if python.exists() and stamp.exists() and stamp.read_text() == digest:
        return python
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([interpreter, "-m", "venv", venv], check=True)  # noqa: S603 (our own tools)
    _pip(python, "--upgrade", "pip>=25.1")  # reads dependency groups
    _pip(python, "--no-deps", "-e", ".")
    _pip(python, "--group", "test", *run.requirements)
    subprocess.run([python, "-m", "pip", "check"], check=True)  # noqa: S603 (our own tools)
    stamp.write_text(digest)
    return python


def run_suite(run: Run, python: Path) -> Outcome:
    versions = subprocess.run(  # noqa: S603 (our own tools)
        [python, "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True, check=True
    ).stdout
    if run.requirements:
        installed = {line.split("==")[0].lower().replace("_", "-"): line for line in versions.splitlines()}
        shown = [installed.get(pin.split("==")[0].lower().replace("_", "-"), pin) for pin in run.requirements]
        print(f"matrix: [{run.name}] installed: {', '.join(shown)}", flush=True)
    started = time.monotonic()
    pytest: list[str | Path] = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--no-header"]
    env = None
    if run.wheel is not None:
        # The checkout after site-packages, so the suite imports the installed
        # wheel: -P (not inherited, unlike PYTHONSAFEPATH, which would keep the
        # examples from importing their neighbours) and pytest's append mode.
        # A server a test starts from the checkout runs the sources.
        pytest[1:1] = ["-P"]
        pytest.append("--import-mode=append")
        env = {**os.environ, "REQUESTSTATE_EXPECT_BUILD": run.wheel}
    done = subprocess.run(  # noqa: S603 (our own tools)
        pytest, cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    seconds = time.monotonic() - started
    lines = done.stdout.strip().splitlines()
    failures = [line for line in lines if line.startswith(("FAILED ", "ERROR "))]
    summary = lines[-1].strip("= ") if lines else "no output"
    if done.returncode != 0:
        print(done.stdout[-20_000:], done.stderr[-5_000:], sep="\n", file=sys.stderr)
        detail = f"{summary} ({seconds:.0f} s)" + "".join(f"\n      {line}" for line in failures)
        return Outcome(run.name, "FAILED", detail)
    return Outcome(run.name, "passed", f"{summary} ({seconds:.0f} s)")


def plan(only: Sequence[str]) -> tuple[list[Run], list[Outcome]]:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    versions = claimed_versions(project)
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    runs = []
    skipped = []
    for version in versions:
        if version == here:
            skipped.append(
                Outcome(f"py{version}", "main", "this Python: the main run (.venv), with coverage")
            )
            continue
        runs.append(Run(f"py{version}", version, (), wheel="compiled"))
    runs.append(Run("floors", versions[0], tuple(lower_bounds(project)), wheel=None))
    runs.append(Run("compiled", here, (), wheel="compiled"))
    if only:
        runs = [run for run in runs if run.name in only or run.version in only]
        skipped = []
    return runs, skipped


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.matrix", description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", default=[], help="run only these (3.12, 3.13, floors, compiled)")
    args = parser.parse_args(argv)
    runs, outcomes = plan(args.only)
    for run in runs:
        interpreter, looked = find_python(run.version)
        if interpreter is None:
            message = f"NO PYTHON {run.version} INTERPRETER (looked in {', '.join(looked)})"
            print(f"\nmatrix: SKIPPED [{run.name}]: {message}\n", file=sys.stderr, flush=True)
            outcomes.append(Outcome(run.name, "SKIPPED", message))
            continue
        unbuilt = compiled.cannot_compile(interpreter) if run.wheel == "compiled" else None
        if unbuilt is not None:
            # Still test that Python, as an install from source gets the package.
            message = f"NO COMPILED BUILD ({unbuilt}): THE PURE-PYTHON WHEEL IS TESTED INSTEAD"
            print(f"\nmatrix: [{run.name}] {message}\n", file=sys.stderr, flush=True)
            run = dataclasses.replace(run, wheel="pure")
        print(f"matrix: [{run.name}] Python {run.version} from {interpreter}", flush=True)
        try:
            python = prepare(run, interpreter)
        except (subprocess.CalledProcessError, ValueError) as failed:
            # ValueError: the build made no wheel, or more than one.
            outcomes.append(Outcome(run.name, "FAILED", f"could not install: {failed}"))
            continue
        outcome = run_suite(run, python)
        if unbuilt is not None:
            outcome = dataclasses.replace(outcome, detail=f"{outcome.detail}; PURE WHEEL: {unbuilt}")
        print(f"matrix: [{run.name}] {outcome.status}: {outcome.detail}", flush=True)
        outcomes.append(outcome)
    print("\nmatrix summary:")
    for outcome in outcomes:
        print(f"  {outcome.name:8} {outcome.status:8} {outcome.detail}")
    return 1 if any(outcome.status == "FAILED" for outcome in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
