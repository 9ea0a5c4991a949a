from __future__ import annotations

import importlib.util
import io
import json
import os
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import requeststate as rs
from requeststate import _cli, _cli_bench
from requeststate._base64 import b64decode
from requeststate._cli import main
from requeststate._cli_demo import run_demo
from tests.conftest import NOW, OTHER_SECRET, SECRET
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
        # inspect reads REQUESTSTATE_KEYS when set: only a test that sets it sees one.
        env={**{k: v for k, v in os.environ.items() if k != "REQUESTSTATE_KEYS"}, **(env or {})},
    )


def token(mode: rs.Modes, state: str = '{"step":1}') -> str:
    return rs.encode(state, SECRET, mode=mode, subject="alice", tool="book", now=NOW)


class Ids:
    """A guard that remembers the last id it was asked to claim."""

    last = ""

    def claim(self, token_id: str, expires_at: int, now: int, /) -> bool:
        Ids.last = token_id
        return True


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


def test_demo_into_a_closed_pipe_exits_quietly() -> None:
    # The reader is gone before the demo writes, as with `requeststate demo | head -0`.
    assert SCRIPT is not None
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [SCRIPT, "demo"], stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60, check=False
        )
    finally:
        os.close(write_end)
    assert done.stderr == ""
    assert done.returncode == 141


# --- usage --------------------------------------------------------------------------


def test_version_prints_the_package_version() -> None:
    done = run("--version")
    assert done.returncode == 0
    assert done.stdout == f"requeststate {rs.__version__}\n"


def test_unknown_command_exits_2_on_stderr() -> None:
    done = run("nope")
    assert done.returncode == 2
    assert "invalid choice" in done.stderr
    assert done.stdout == ""


def test_bare_command_prints_the_help_on_stdout_and_exits_0() -> None:
    done = run()
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: requeststate")
    assert "inspect" in done.stdout
    assert done.stderr == ""


def test_importing_the_command_line_does_not_load_mcp() -> None:
    # A fresh interpreter: the probe, the one command that needs the mcp extra, loads it when run.
    code = "import sys, requeststate._cli; print(sorted({'mcp', 'requeststate.probe'} & set(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout == "[]\n"


@pytest.mark.parametrize("command", ["demo", "keygen", "inspect", "mint", "bench"])
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


@pytest.mark.parametrize("size", ["16", "1025", "100000000000"])
def test_keygen_refuses_a_size_outside_32_to_1024_bytes(size: str) -> None:
    done = run("keygen", "--bytes", size)
    assert done.returncode == 2
    assert "a secret is 32 to 1024 bytes" in done.stderr
    assert done.stdout == ""


def test_keygen_prints_the_largest_allowed_secret() -> None:
    assert len(b64decode(run("keygen", "--bytes", "1024").stdout.strip()) or b"") == 1024


def test_keygen_of_a_non_number_is_a_usage_error_naming_no_internal_function() -> None:
    done = run("keygen", "--bytes", "abc")
    assert done.returncode == 2
    assert "argument --bytes: not a whole number of bytes: 'abc'" in done.stderr
    assert "_secret_bytes" not in done.stderr


def test_probe_timeout_of_a_non_number_is_a_usage_error_naming_no_internal_function() -> None:
    done = run("probe", "--timeout", "soon", "--url", "http://127.0.0.1:9/mcp")
    assert done.returncode == 2
    assert "argument --timeout: not a number of seconds: 'soon'" in done.stderr
    assert "_seconds" not in done.stderr


def test_probe_ttl_of_zero_or_less_is_a_usage_error_about_seconds_not_a_timeout() -> None:
    # It said "a timeout is a positive number of seconds" of --ttl, the state's lifetime.
    done = run("probe", "--ttl", "-3", "--url", "http://127.0.0.1:9/mcp")
    assert done.returncode == 2
    assert "argument --ttl: not a positive number of seconds: '-3'" in done.stderr
    assert "timeout" not in done.stderr


# --- inspect ------------------------------------------------------------------------


def test_inspect_signed_without_key_shows_the_payload_unverified() -> None:
    done = run("inspect", token("signed"))
    assert done.returncode == 0
    assert "UNVERIFIED" in done.stdout
    assert '"exp": 2000000300' in done.stdout
    assert "prefix:  v1.\n" in done.stdout
    assert "mode:    signed\n" in done.stdout


def test_inspect_signed_without_key_shows_expiry_id_and_time_left() -> None:
    minted = token("signed")
    token_id = rs.verify(minted, SECRET, mode="signed", subject="alice", tool="book", now=NOW, guard=Ids())
    done = run("inspect", minted, "--now", str(NOW + 100))
    assert "expires: 2033-05-18T03:38:20Z (unix 2000000300), 200 s left" in done.stdout
    assert f'id:      "{Ids.last}"' in done.stdout
    assert token_id == '{"step":1}'


def test_inspect_says_how_long_ago_a_token_expired() -> None:
    done = run("inspect", token("signed"), "--now", str(NOW + 400))
    assert "(unix 2000000300), expired 100 s ago" in done.stdout


@pytest.mark.parametrize("mode", list(rs.Mode), ids=str)
def test_inspect_with_key_shows_the_verified_expiry_and_id(mode: rs.Mode) -> None:
    minted = token(mode)
    rs.verify(minted, SECRET, mode=mode, subject="alice", tool="book", now=NOW, guard=Ids())
    args = ("inspect", minted, "--key-env", "TEST_KEYS", "--subject", "alice", "--tool", "book")
    done = run(*args, "--now", str(NOW + 1), "--leeway", "5", env=KEY_ENV)
    assert "expires: 2033-05-18T03:38:20Z (unix 2000000300), 299 s left" in done.stdout
    assert f'id:      "{Ids.last}"' in done.stdout


def test_inspect_reads_requeststate_keys_when_it_is_set() -> None:
    args = ("inspect", token("encrypted"), "--subject", "alice", "--tool", "book", "--now", str(NOW))
    done = run(*args, env={"REQUESTSTATE_KEYS": b64(SECRET)})
    assert done.returncode == 0, done.stderr
    assert "from REQUESTSTATE_KEYS" in done.stdout
    assert '"{\\"step\\":1}"' in done.stdout


def test_inspect_with_requeststate_keys_empty_shows_the_token_unverified() -> None:
    done = run("inspect", token("signed"), env={"REQUESTSTATE_KEYS": ""})
    assert done.returncode == 0
    assert "UNVERIFIED" in done.stdout


def test_inspect_strips_a_trailing_newline_from_the_argument() -> None:
    args = ("inspect", token("signed") + "\n", "--key-env", "TEST_KEYS", "--subject", "alice")
    done = run(*args, "--tool", "book", "--now", str(NOW), env=KEY_ENV)
    assert done.returncode == 0, done.stdout
    assert "VALID" in done.stdout


@pytest.mark.parametrize("text", ["v1e.!!!!", "v1e.AAAA", "v1x." + "A" * 52])
def test_inspect_of_a_malformed_sealed_token_never_says_encrypted(text: str) -> None:
    done = run("inspect", text)
    assert done.returncode == 1
    assert "encrypted" not in done.stdout + done.stderr
    assert "sealed" not in done.stdout
    assert f"prefix:  {text[:4]}" in done.stdout
    assert f"not a well-formed {text[:4]} token" in done.stderr


def test_inspect_of_a_deeply_nested_payload_refuses_it_cleanly() -> None:
    nested = b"[" * 100_000 + b"]" * 100_000
    done = run("inspect", "-", stdin="v1." + b64(nested) + ".x")
    assert done.returncode == 1
    assert done.stderr == "not a well-formed v1. token: its payload is JSON nested too deeply\n"


@pytest.mark.parametrize(("option", "value"), [("--leeway", "-1"), ("--now", str(2**63))])
def test_inspect_with_an_option_out_of_range_is_a_usage_error(option: str, value: str) -> None:
    done = run("inspect", token("signed"), "--key-env", "TEST_KEYS", option, value, env=KEY_ENV)
    assert done.returncode == 2
    assert f"error: {option[2:]} must be an int from" in done.stderr
    assert "Traceback" not in done.stderr


def test_inspect_with_a_hex_key_names_the_key_encoding_option() -> None:
    done = run("inspect", token("signed"), "--key-env", "HEX", env={"HEX": SECRET.hex()})
    assert done.returncode == 2
    assert "--key-encoding hex" in done.stderr


def test_inspect_reads_a_hex_key_with_key_encoding_hex() -> None:
    args = ("inspect", token("signed"), "--key-env", "HEX", "--key-encoding", "hex", "--subject", "alice")
    done = run(*args, "--tool", "book", "--now", str(NOW), env={"HEX": SECRET.hex()})
    assert done.returncode == 0, done.stderr
    assert "VALID" in done.stdout


def test_inspect_escapes_control_characters_in_the_unverified_payload() -> None:
    done = run("inspect", token("signed", "\x1b[31mred"))
    assert "\x1b" not in done.stdout
    assert "\\u001b" in done.stdout


@pytest.mark.parametrize("mode", ["encrypted", "xchacha"])
def test_inspect_encrypted_without_key_shows_only_mode_and_size(mode: rs.ModeName) -> None:
    done = run("inspect", token(mode, "top-secret"))
    assert done.returncode == 0
    assert f"mode:    {mode}\n" in done.stdout
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
    assert "REFUSED under TEST_KEYS: bad_signature" in done.stdout


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
    assert "not a well-formed v1. token: the payload is not readable" in done.stderr


def test_inspect_of_a_signed_payload_that_is_not_json_exits_1() -> None:
    done = run("inspect", "v1." + b64(b"not json") + ".x")
    assert done.returncode == 1
    assert done.stderr == "not a well-formed v1. token: the payload is not readable base64url JSON\n"


@pytest.mark.parametrize("mode", ["encrypted", "xchacha"])
def test_inspect_of_an_encrypted_token_without_subject_and_tool_hints_at_them(mode: rs.ModeName) -> None:
    done = run("inspect", token(mode), "--key-env", "TEST_KEYS", "--now", str(NOW), env=KEY_ENV)
    assert done.returncode == 1
    assert "REFUSED under TEST_KEYS: bad_signature\nhint:    the tag of a v1" in done.stdout
    assert "pass --subject and --tool as at mint" in " ".join(done.stdout.split())


def test_inspect_hint_names_only_the_flag_not_given() -> None:
    args = ("inspect", token("encrypted"), "--key-env", "TEST_KEYS", "--subject", "alice", "--json")
    hint = json.loads(run(*args, env=KEY_ENV).stdout)["hint"]
    assert hint.endswith("; pass --tool as at mint")


def test_inspect_gives_no_hint_when_subject_and_tool_were_given() -> None:
    args = ("inspect", token("encrypted"), "--key-env", "OTHER", "--subject", "alice", "--tool", "book")
    done = run(*args, "--json", env={"OTHER": b64(OTHER_SECRET)})
    assert json.loads(done.stdout)["reason"] == "bad_signature"
    assert json.loads(done.stdout)["hint"] is None


def test_inspect_of_a_signed_token_without_subject_and_tool_hints_at_them() -> None:
    # Its wrong_binding came without the hint an encrypted token's bad_signature had.
    done = run("inspect", token("signed"), "--key-env", "TEST_KEYS", "--now", str(NOW), env=KEY_ENV)
    assert done.returncode == 1
    refused = "REFUSED under TEST_KEYS: wrong_binding\nhint:    a v1. token is bound to the subject"
    assert refused in done.stdout
    assert "minted for: pass --subject and --tool as at mint" in " ".join(done.stdout.split())


def test_inspect_of_an_expired_token_gives_no_binding_hint() -> None:
    args = ("inspect", token("signed"), "--key-env", "TEST_KEYS", "--now", str(NOW + 10**6), "--json")
    done = run(*args, "--subject", "alice", env=KEY_ENV)
    assert json.loads(done.stdout)["reason"] == "expired"
    assert json.loads(done.stdout)["hint"] is None


def test_inspect_of_a_signed_token_under_a_wrong_key_gives_no_binding_hint() -> None:
    # A v1. MAC does not cover the identity: its bad_signature is a wrong key (or a forgery).
    done = run("inspect", token("signed"), "--key-env", "OTHER", "--json", env={"OTHER": b64(OTHER_SECRET)})
    assert json.loads(done.stdout)["reason"] == "bad_signature"
    assert json.loads(done.stdout)["hint"] is None


# --- inspect --json -------------------------------------------------------------------


def inspect_json(*args: str, env: dict[str, str] | None = None) -> tuple[int, dict[str, object]]:
    done = run("inspect", *args, "--json", env=env)
    assert done.stderr == ""
    found: dict[str, object] = json.loads(done.stdout)
    return done.returncode, found


NOTHING_FOUND: dict[str, object] = dict.fromkeys(
    (
        "prefix",
        "mode",
        "reason",
        "hint",
        "key_env",
        "fingerprint",
        "exp",
        "expires",
        "seconds_left",
        "id",
        "state",
    )
)


@pytest.mark.parametrize("mode", list(rs.Mode), ids=str)
def test_inspect_json_of_a_verified_token_holds_its_claims_and_the_rings_fingerprint(mode: rs.Mode) -> None:
    minted = token(mode)
    rs.verify(minted, SECRET, mode=mode, subject="alice", tool="book", now=NOW, guard=Ids())
    args = (minted, "--key-env", "TEST_KEYS", "--subject", "alice", "--tool", "book", "--leeway", "5")
    assert inspect_json(*args, "--now", str(NOW + 1), env=KEY_ENV) == (
        0,
        {
            **NOTHING_FOUND,
            "prefix": minted[: minted.index(".") + 1],
            "mode": mode.value,
            "length": len(minted),
            "verified": True,
            "key_env": "TEST_KEYS",
            "fingerprint": rs.KeyRing(SECRET).fingerprint,
            "exp": NOW + 300,
            "expires": "2033-05-18T03:38:20Z",
            "seconds_left": 299,
            "id": Ids.last,
            "state": '{"step":1}',
        },
    )


def test_inspect_json_of_a_refused_token_gives_the_reason_and_exits_1() -> None:
    minted = token("signed")
    args = (minted, "--key-env", "TEST_KEYS", "--subject", "mallory", "--tool", "book", "--now", str(NOW))
    assert inspect_json(*args, env=KEY_ENV) == (
        1,
        {
            **NOTHING_FOUND,
            "prefix": "v1.",
            "length": len(minted),
            "verified": False,
            "reason": "wrong_binding",
            "key_env": "TEST_KEYS",
        },
    )


def test_inspect_json_without_a_key_gives_a_signed_tokens_claims_unverified() -> None:
    minted = token("signed")
    rs.verify(minted, SECRET, mode="signed", subject="alice", tool="book", now=NOW, guard=Ids())
    assert inspect_json(minted, "--now", str(NOW + 400)) == (
        0,
        {
            **NOTHING_FOUND,
            "prefix": "v1.",
            "mode": "signed",
            "length": len(minted),
            "verified": False,
            "exp": NOW + 300,
            "expires": "2033-05-18T03:38:20Z",
            "seconds_left": -100,
            "id": Ids.last,
            "state": '{"step":1}',
        },
    )


@pytest.mark.parametrize("mode", ["encrypted", "xchacha"])
def test_inspect_json_of_a_sealed_token_without_a_key_gives_its_mode_only(mode: rs.ModeName) -> None:
    minted = token(mode, "top-secret")
    assert inspect_json(minted) == (
        0,
        {**NOTHING_FOUND, "prefix": minted[:4], "mode": mode, "length": len(minted), "verified": False},
    )


@pytest.mark.parametrize("text", ["hello", "v1e.!!!!", "v1." + b64(b"not json") + ".x"])
def test_inspect_json_of_what_is_no_readable_token_says_malformed_on_stdout(text: str) -> None:
    code, found = inspect_json(text)
    assert code == 1
    assert (found["verified"], found["reason"], found["mode"]) == (False, "malformed", None)


def test_inspect_json_escapes_the_unverified_content_it_shows() -> None:
    # ESC and the one-character CSI (U+009B), which some terminals obey too.
    payload = json.dumps({"s": "\x1b[31mred", "exp": NOW, "b": "0" * 64, "id": "\u009b2J"}).encode()
    done = run("inspect", "v1." + b64(payload) + "." + b64(bytes(32)), "--json")
    assert "\x1b" not in done.stdout
    assert "\u009b" not in done.stdout
    assert '"state": "\\u001b[31mred"' in done.stdout
    assert json.loads(done.stdout)["id"] == "\u009b2J"


def test_inspect_json_with_a_key_that_cannot_be_read_prints_no_json() -> None:
    done = run("inspect", token("signed"), "--json", "--key-env", "UNSET_REQUESTSTATE_KEYS")
    assert done.returncode == 2
    assert done.stdout == ""
    assert "UNSET_REQUESTSTATE_KEYS is not set" in done.stderr


# --- mint ---------------------------------------------------------------------------


def mint(*args: str, stdin: str = "", env: dict[str, str] | None = None) -> str:
    done = run("mint", *args, stdin=stdin, env=KEY_ENV if env is None else env)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return done.stdout.removesuffix("\n")


@pytest.mark.parametrize("mode", list(rs.Mode), ids=str)
def test_minted_token_decodes_with_requeststate_decode(mode: rs.Mode) -> None:
    args = (
        "--key-env",
        "TEST_KEYS",
        "--mode",
        mode,
        "--subject",
        "alice",
        "--tool",
        "book",
        "--now",
        str(NOW),
    )
    minted = mint('{"step":1}', *args)
    assert rs.decode(minted, SECRET, mode=mode, subject="alice", tool="book", now=NOW) == '{"step":1}'


@pytest.mark.parametrize("mode", list(rs.Mode), ids=str)
def test_minted_token_verifies_with_inspect(mode: rs.Mode) -> None:
    minted = mint("x", "--key-env", "TEST_KEYS", "--mode", mode, "--subject", "alice", "--now", str(NOW))
    code, found = inspect_json(
        minted, "--key-env", "TEST_KEYS", "--subject", "alice", "--now", str(NOW), env=KEY_ENV
    )
    assert (code, found["verified"], found["state"], found["exp"]) == (0, True, "x", NOW + 300)


def test_mint_lets_the_token_live_ttl_seconds() -> None:
    minted = mint("x", "--key-env", "TEST_KEYS", "--ttl", "60", "--now", str(NOW))
    assert rs.decode(minted, SECRET, mode="encrypted", now=NOW + 60) == "x"
    assert rs.decode(minted, SECRET, mode="encrypted", now=NOW + 61) is None


def test_mint_defaults_to_an_encrypted_token_under_requeststate_keys() -> None:
    minted = mint("x", env={"REQUESTSTATE_KEYS": b64(SECRET)})
    assert minted.startswith("v1e.")
    assert rs.decode(minted, SECRET, mode="encrypted") == "x"


def test_mint_reads_the_state_from_stdin_without_its_last_newline() -> None:
    minted = mint("-", "--key-env", "TEST_KEYS", stdin='{"a":1}\n\n')
    assert rs.decode(minted, SECRET, mode="encrypted") == '{"a":1}\n'


def test_mint_reads_a_hex_key_with_key_encoding_hex() -> None:
    minted = mint("x", "--key-env", "HEX", "--key-encoding", "hex", env={"HEX": SECRET.hex()})
    assert rs.decode(minted, SECRET, mode="encrypted") == "x"


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        ((), {}, "error: REQUESTSTATE_KEYS is not set"),
        (("--key-env", "K"), {"K": "c2hvcnQ"}, "error: K: secret 0 "),
        (("--key-env", "K"), {"K": b64(b"ab" * 16)}, "error: K: secret 0 "),
        (("--key-env", "K"), {"K": SECRET.hex()}, "--key-encoding hex"),
        (("--key-env", "TEST_KEYS", "--mode", "plain"), KEY_ENV, "argument --mode: invalid choice: 'plain'"),
        (
            ("--key-env", "TEST_KEYS", "--ttl", "0"),
            KEY_ENV,
            "error: ttl must be an int from 1 to 86400, got 0",
        ),
        (("--key-env", "TEST_KEYS", "--ttl", "86401"), KEY_ENV, "error: ttl must be an int from 1 to 86400"),
        (("--key-env", "TEST_KEYS", "--ttl", "soon"), KEY_ENV, "argument --ttl: invalid int value: 'soon'"),
        (("--key-env", "TEST_KEYS", "--now", str(2**63)), KEY_ENV, "error: now must be an int from"),
        (
            ("--key-env", "TEST_KEYS", "--subject", '{"sub":"x"}'),
            KEY_ENV,
            "error: a subject bound without a tool must not start with '{'",
        ),
    ],
    ids=[
        "no-keys",
        "short-key",
        "low-entropy-key",
        "hex-key",
        "mode",
        "ttl-0",
        "ttl-day+1",
        "ttl-text",
        "now",
        "identity",
    ],
)
def test_mint_that_cannot_mint_exits_2_saying_why_without_a_traceback(
    args: tuple[str, ...], env: dict[str, str], message: str
) -> None:
    done = run("mint", "x", *args, env=env)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
    for secret in env.values():
        assert secret not in done.stderr


# --- bench ---------------------------------------------------------------------------


@pytest.fixture
def from_a_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if requeststate were imported from the checkout its benchmarks sit in, as make bench runs it.

    The editable installs here are; this keeps the tests true of any other install.
    """
    monkeypatch.setattr(_cli, "checkout_benchmarks", lambda: True)


@pytest.fixture
def from_a_wheel(monkeypatch: pytest.MonkeyPatch) -> None:
    """As installed from a wheel: no benchmarks package anywhere on sys.path."""
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)


def test_the_benchmarks_are_the_checkouts_only_when_the_package_is_imported_from_it() -> None:
    # The sources here (True), or an installed wheel beside this checkout's benchmarks (False).
    from_checkout = (
        Path(_cli_bench.__file__).resolve().parent.parent == Path(__file__).resolve().parent.parent
    )
    assert _cli_bench.checkout_benchmarks() is from_checkout


@pytest.mark.usefixtures("from_a_checkout")
def test_the_help_lists_bench_in_a_checkout(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    assert "    bench     run the benchmark" in capsys.readouterr().out


@pytest.mark.usefixtures("from_a_wheel")
def test_the_help_does_not_list_bench_outside_a_checkout(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    help_text = capsys.readouterr().out
    assert "    inspect   show" in help_text
    assert "bench" not in help_text


@pytest.mark.usefixtures("from_a_wheel")
def test_an_unknown_command_outside_a_checkout_is_not_offered_bench(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit, match="2"):
        main(["nope"])
    error = capsys.readouterr().err
    assert "invalid choice: 'nope'" in error
    assert "bench" not in error


@pytest.mark.usefixtures("from_a_wheel")
@pytest.mark.parametrize("args", [["bench"], ["bench", "--help"], ["bench", "--quick"]])
def test_bench_outside_a_checkout_says_run_from_a_checkout(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(args) == 2
    assert capsys.readouterr() == ("", f"{_cli_bench.BENCH_NEEDS_CHECKOUT}\n")


@pytest.mark.usefixtures("from_a_checkout")
def test_bench_runs_the_checkouts_benchmark_module(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []

    def fake_run_module(name: str, **options: object) -> None:
        seen.append([name, *sys.argv])
        raise SystemExit(0)

    monkeypatch.setattr(runpy, "run_module", fake_run_module)
    assert main(["bench", "--quick"]) == 0
    assert seen == [["benchmarks", "benchmarks", "--quick"]]


def test_bench_never_runs_a_benchmarks_package_from_the_current_directory(tmp_path: Path) -> None:
    rogue = tmp_path / "benchmarks"
    rogue.mkdir()
    (rogue / "__init__.py").write_text("")
    (rogue / "__main__.py").write_text("print('ROGUE BENCHMARK RAN')\n")
    done = subprocess.run(
        [sys.executable, "-m", "requeststate", "bench"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "ROGUE" not in done.stdout
    assert done.returncode == 2
    assert "run from a checkout" in done.stderr


@pytest.mark.usefixtures("from_a_checkout")
def test_bench_whose_dependencies_are_missing_exits_2_naming_the_bench_group(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def missing(name: str, **options: object) -> None:
        # What a wheel install meets: the module exists, a name inside it does not.
        raise ImportError("cannot import name 'pyplot'", name="matplotlib")

    monkeypatch.setattr(runpy, "run_module", missing)
    assert main(["bench"]) == 2
    assert "cannot import matplotlib: run it with make bench" in capsys.readouterr().err


@pytest.mark.usefixtures("from_a_checkout")
def test_bench_returns_the_benchmarks_exit_code(monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(name: str, **options: object) -> None:
        raise SystemExit(1)

    monkeypatch.setattr(runpy, "run_module", failing)
    assert main(["bench"]) == 1


@pytest.mark.usefixtures("from_a_checkout")
def test_bench_that_returns_normally_exits_0(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runpy, "run_module", lambda name, **options: None)
    assert main(["bench"]) == 0


def test_inspect_escapes_control_characters_in_an_unverified_id() -> None:
    # The id of an unverified v1. payload is anyone's to write; it once reached the terminal raw.
    payload = json.dumps({"s": "x", "exp": NOW, "b": "0" * 64, "id": "\x1b]0;PWNED\x07\x1b[2J"}).encode()
    done = run("inspect", "v1." + b64(payload) + "." + b64(bytes(32)), env={"REQUESTSTATE_KEYS": ""})
    assert "\x1b" not in done.stdout
    assert 'id:      "\\u001b]0;PWNED\\u0007\\u001b[2J"' in done.stdout


@pytest.mark.parametrize("mode", list(rs.Mode), ids=str)
def test_inspect_under_the_key_says_when_an_expired_token_expired(mode: rs.Mode) -> None:
    # Before: "REFUSED ...: expired" and "exp": null, though without the key a signed token showed it.
    args = ("inspect", token(mode), "--key-env", "TEST_KEYS", "--subject", "alice", "--tool", "book")
    done = run(*args, "--now", str(NOW + 400), env=KEY_ENV)
    as_json = json.loads(run(*args, "--now", str(NOW + 400), "--json", env=KEY_ENV).stdout)
    assert (
        "REFUSED under TEST_KEYS: expired\nexpires: 2033-05-18T03:38:20Z (unix 2000000300), expired 100 s ago"
        in (done.stdout)
    )
    assert (as_json["reason"], as_json["exp"], as_json["seconds_left"]) == ("expired", NOW + 300, -100)


def test_inspect_of_a_signed_token_expired_and_of_another_identity_shows_no_expiry() -> None:
    # v1. checks the expiry before the binding: refused as expired, yet not this identity's token.
    args = ("inspect", token("signed"), "--key-env", "TEST_KEYS", "--subject", "bob", "--tool", "book")
    as_json = json.loads(run(*args, "--now", str(NOW + 400), "--json", env=KEY_ENV).stdout)
    assert (as_json["reason"], as_json["exp"]) == ("expired", None)
