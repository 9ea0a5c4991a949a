"""scripts/matrix.py: which Pythons and which lower bounds make test runs the suite on."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

from scripts import compiled, matrix

PROJECT = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())["project"]


def test_the_claimed_versions_come_from_the_classifiers() -> None:
    assert matrix.claimed_versions(PROJECT) == ["3.11", "3.12", "3.13"]


def test_the_floors_pin_every_runtime_and_extra_dependency_at_its_lower_bound() -> None:
    assert matrix.lower_bounds(PROJECT) == [
        "cryptography==42",
        "msgspec==0.18",
        "pynacl==1.5",
        "mcp==2.3",
        "mcp-types==2.3",
        "anyio==4.10",
        "httpx2==2.10",
        "redis==6.0",
    ]


def test_the_plan_runs_the_compiled_build_on_every_python_and_the_sources_at_the_floors() -> None:
    runs, main_run = matrix.plan([])
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    others = [version for version in ("3.11", "3.12", "3.13") if version != here]
    assert [(run.name, run.version, run.wheel) for run in runs] == [
        *((f"py{version}", version, "compiled") for version in others),
        ("floors", "3.11", None),
        ("compiled", here, "compiled"),
    ]
    assert runs[-2].requirements == tuple(matrix.lower_bounds(PROJECT))
    assert [outcome.name for outcome in main_run] == [f"py{here}"]


def test_a_dependency_without_a_lower_bound_stops_the_matrix() -> None:
    with pytest.raises(SystemExit, match=r"'msgspec' declares no lower bound"):
        matrix.lower_bounds({"dependencies": ["msgspec"], "optional-dependencies": {"mcp": [], "redis": []}})


def test_an_absent_python_is_not_found_and_says_where_it_looked() -> None:
    found, looked = matrix.find_python("3.99")
    assert found is None
    assert looked[-1] == "python3.99 on PATH"


def test_a_missing_interpreter_is_skipped_loudly_and_does_not_fail(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run = matrix.Run("py3.99", "3.99", (), wheel="compiled")
    monkeypatch.setattr(matrix, "plan", lambda only: ([run], []))
    assert matrix.main([]) == 0
    captured = capsys.readouterr()
    assert "matrix: SKIPPED [py3.99]: NO PYTHON 3.99 INTERPRETER" in captured.err
    assert "py3.99   SKIPPED  NO PYTHON 3.99 INTERPRETER" in captured.out


def test_a_python_without_the_compiled_build_tests_its_pure_wheel_and_says_so_loudly(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    prepared: list[matrix.Run] = []

    def prepare(run: matrix.Run, interpreter: Path) -> Path:
        prepared.append(run)
        return Path(sys.executable)

    monkeypatch.setattr(
        matrix, "plan", lambda only: ([matrix.Run("compiled", here, (), wheel="compiled")], [])
    )
    monkeypatch.setattr(compiled, "cannot_compile", lambda interpreter: "no C compiler (cc)")
    monkeypatch.setattr(matrix, "prepare", prepare)
    monkeypatch.setattr(
        matrix, "run_suite", lambda run, python: matrix.Outcome(run.name, "passed", "9 passed")
    )
    assert matrix.main([]) == 0
    assert [run.wheel for run in prepared] == ["pure"]
    captured = capsys.readouterr()
    message = "NO COMPILED BUILD (no C compiler (cc)): THE PURE-PYTHON WHEEL IS TESTED INSTEAD"
    assert f"matrix: [compiled] {message}" in captured.err
    assert "compiled passed   9 passed; PURE WHEEL: no C compiler (cc)" in captured.out


def test_a_build_that_makes_no_wheel_fails_the_run_instead_of_the_matrix(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"

    def no_wheel(run: matrix.Run, interpreter: Path) -> Path:
        raise ValueError("not enough values to unpack (expected 1, got 0)")

    monkeypatch.setattr(
        matrix, "plan", lambda only: ([matrix.Run("compiled", here, (), wheel="compiled")], [])
    )
    monkeypatch.setattr(compiled, "cannot_compile", lambda interpreter: None)
    monkeypatch.setattr(matrix, "prepare", no_wheel)
    assert matrix.main([]) == 1
    assert "compiled FAILED   could not install: not enough values to unpack" in capsys.readouterr().out
