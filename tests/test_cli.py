from __future__ import annotations

import io
import os
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import requeststate as rs
from requeststate import _cli
from requeststate._base64 import b64decode
from requeststate._cli import main, run_demo
from tests.conftest import NOW, SECRET
from tests.support.reference import b64

SCRIPT = shutil.which("requeststate", path=str(Path(sys.executable).parent))
KEY_ENV = {"TEST_KEYS": b64(SECRET)}


def run(*args: str, stdin: str = "", env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The real console script, in a subprocess."""
    assert SCRIPT is not None, "the requeststate console script is not installed beside this Python"
    return subprocess.run(
        [SCRIPT, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, **(env or {})},
    )


def token(mode: rs.Modes, state: str = '{"step":1}') -> str:
    return rs.encode(state, SECRET, mode=mode, subject="alice", tool="book", now=NOW)


# --- demo ---------------------------------------------------------------------------


def test_demo_shows_each_mode_accepted_and_refusals_with_reasons() -> None:
    out = io.StringIO()
    assert run_demo(out) == 0
    text = out.getvalue()
    assert text.count("accepted:") == len(rs.Mode)
    for reason in ("bad_signature", "expired", "wrong_binding"):
        assert reason in text
    for mode in rs.Mode:
        assert f"[{mode}]" in text


def test_demo_prints_the_ring_by_fingerprint_only() -> None:
    out = io.StringIO()
    run_demo(out)
    assert "KeyRing(keys=1" in out.getvalue()


def test_console_script_runs_the_demo() -> None:
    done = run("demo")
    assert done.returncode == 0, done.stderr
    assert "accepted:" in done.stdout


def test_dunder_main_exits_with_mains_code(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["requeststate", "demo"])
    with pytest.raises(SystemExit) as caught:
        runpy.run_module("requeststate", run_name="__main__")
    assert caught.value.code == 0


def test_main_runs_the_demo(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    assert "accepted:" in capsys.readouterr().out


# --- usage --------------------------------------------------------------------------


def test_unknown_command_exits_2_on_stderr() -> None:
    done = run("nope")
    assert done.returncode == 2
    assert "invalid choice" in done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize("command", ["demo", "keygen", "inspect", "bench"])
def test_every_command_has_help(command: str) -> None:
    done = run(command, "--help")
    assert done.returncode == 0
    assert "usage: requeststate" in done.stdout


# --- keygen -------------------------------------------------------------------------


def test_keygen_prints_a_fresh_32_byte_base64url_secret() -> None:
    first, second = run("keygen").stdout.strip(), run("keygen").stdout.strip()
    assert len(b64decode(first) or b"") == 32
    assert first != second


def test_keygen_output_is_a_valid_key_ring() -> None:
    secret = run("keygen", "--bytes", "48").stdout.strip()
    assert len(rs.KeyRing.from_env("K", environ={"K": secret})) == 1


def test_keygen_refuses_short_secrets() -> None:
    done = run("keygen", "--bytes", "16")
    assert done.returncode == 2
    assert "at least 32 bytes" in done.stderr


# --- inspect ------------------------------------------------------------------------


def test_inspect_signed_without_key_shows_the_payload_unverified() -> None:
    done = run("inspect", token("signed"))
    assert done.returncode == 0
    assert "UNVERIFIED" in done.stdout
    assert '"exp": 2000000300' in done.stdout
    assert "signed (v1.)" in done.stdout


def test_inspect_escapes_control_characters_in_the_unverified_payload() -> None:
    done = run("inspect", token("signed", "\x1b[31mred"))
    assert "\x1b" not in done.stdout
    assert "\\u001b" in done.stdout


@pytest.mark.parametrize("mode", ["encrypted", "xchacha"])
def test_inspect_encrypted_without_key_shows_only_mode_and_size(mode: rs.ModeName) -> None:
    done = run("inspect", token(mode, "top-secret"))
    assert done.returncode == 0
    assert f"mode:   {mode}" in done.stdout
    assert "length:" in done.stdout
    assert "top-secret" not in done.stdout


@pytest.mark.parametrize("mode", list(rs.Mode), ids=str)
def test_inspect_with_key_verifies_and_prints_the_state(mode: rs.Mode) -> None:
    args = ("inspect", token(mode), "--key-env", "TEST_KEYS", "--subject", "alice", "--tool", "book")
    done = run(*args, "--now", str(NOW), env=KEY_ENV)
    assert done.returncode == 0, done.stderr
    assert "VALID" in done.stdout
    assert '"{\\"step\\":1}"' in done.stdout


def test_inspect_with_key_prints_the_refusal_reason_and_exits_1() -> None:
    done = run("inspect", token("encrypted"), "--key-env", "TEST_KEYS", "--subject", "mallory", env=KEY_ENV)
    assert done.returncode == 1
    assert "REFUSED: bad_signature" in done.stdout


def test_inspect_reads_the_token_from_stdin() -> None:
    args = (
        "inspect",
        "-",
        "--key-env",
        "TEST_KEYS",
        "--subject",
        "alice",
        "--tool",
        "book",
        "--now",
        str(NOW),
    )
    done = run(*args, stdin=token("signed") + "\n", env=KEY_ENV)
    assert done.returncode == 0
    assert "VALID" in done.stdout


def test_inspect_with_an_unset_key_variable_exits_2_naming_it() -> None:
    done = run("inspect", token("signed"), "--key-env", "UNSET_REQUESTSTATE_KEYS")
    assert done.returncode == 2
    assert "UNSET_REQUESTSTATE_KEYS is not set" in done.stderr


def test_inspect_with_a_bad_key_value_never_prints_it() -> None:
    done = run("inspect", token("signed"), "--key-env", "BAD", env={"BAD": "c2hvcnQ"})
    assert done.returncode == 2
    assert "c2hvcnQ" not in done.stderr + done.stdout


@pytest.mark.parametrize("text", ["hello", "v2.abc", ""])
def test_inspect_of_a_non_token_exits_1(text: str) -> None:
    done = run("inspect", text)
    assert done.returncode == 1
    assert "not a requeststate token" in done.stderr


def test_inspect_of_an_unreadable_signed_payload_exits_1() -> None:
    done = run("inspect", "v1.!!!.x")
    assert done.returncode == 1
    assert "not readable" in done.stderr


def test_read_unverified_payload_of_non_json_is_none() -> None:
    assert _cli._read_unverified_payload("v1." + b64(b"not json") + ".x") is None


# --- bench --------------------------------------------------------------------------


def test_bench_runs_the_benchmark_module(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []

    def fake_run_module(name: str, **options: object) -> None:
        seen.append([name, *sys.argv])
        raise SystemExit(0)

    monkeypatch.setattr(runpy, "run_module", fake_run_module)
    assert main(["bench", "--quick"]) == 0
    assert seen == [["benchmarks", "benchmarks", "--quick"]]


def test_bench_outside_a_checkout_exits_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def missing(name: str, **options: object) -> None:
        raise ModuleNotFoundError(name)

    monkeypatch.setattr(runpy, "run_module", missing)
    assert main(["bench"]) == 2
    assert "source tree" in capsys.readouterr().err


def test_bench_returns_the_benchmarks_exit_code(monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(name: str, **options: object) -> None:
        raise SystemExit(1)

    monkeypatch.setattr(runpy, "run_module", failing)
    assert main(["bench"]) == 1


def test_bench_that_returns_normally_exits_0(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runpy, "run_module", lambda name, **options: None)
    assert main(["bench"]) == 0
