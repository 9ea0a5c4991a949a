from __future__ import annotations

import io
import runpy
import subprocess
import sys

import pytest

from requeststate._cli import main, run_demo


def test_demo_shows_each_mode_accepted_and_refusals_with_reasons() -> None:
    out = io.StringIO()
    assert run_demo(out) == 0
    text = out.getvalue()
    assert text.count("accepted:") == 2
    for reason in ("bad_signature", "expired", "wrong_binding"):
        assert reason in text
    assert "[signed]" in text
    assert "[encrypted]" in text


def test_demo_never_prints_key_material() -> None:
    out = io.StringIO()
    run_demo(out)
    assert "KeyRing(keys=1" in out.getvalue()


def test_dunder_main_exits_with_mains_code(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["requeststate", "demo"])
    with pytest.raises(SystemExit) as caught:
        runpy.run_module("requeststate", run_name="__main__")
    assert caught.value.code == 0


def test_module_entry_point_runs_the_demo() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "requeststate", "demo"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "accepted:" in done.stdout


def test_unknown_command_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["nope"])
    assert caught.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_main_runs_the_demo(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    assert "accepted:" in capsys.readouterr().out
