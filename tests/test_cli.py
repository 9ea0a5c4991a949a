from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

import requeststate as rs
from requeststate._base64 import b64decode
from requeststate.cli import main
from requeststate.cli._demo import run_demo
from requeststate.cli._probe import add_probe
from tests.conftest import NOW, OTHER_SECRET, SECRET
from tests.support.reference import b64

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = shutil.which("requeststate", path=str(Path(sys.executable).parent))
KEY_ENV = {"TEST_KEYS": b64(SECRET)}


def without_keys(env: dict[str, str] | None = None) -> dict[str, str]:
    """This environment, without REQUESTSTATE_KEYS (inspect reads it), and ``env``."""
    return {**{k: v for k, v in os.environ.items() if k != "REQUESTSTATE_KEYS"}, **(env or {})}


def run(*args: str, stdin: str = "", env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``main(args)`` in this process, reading ``stdin``, in ``without_keys(env)``: its exit code and output.

    The console script around it has tests of its own (test_console_script_runs_the_demo,
    test_dunder_main_exits_with_mains_code, test_demo_into_a_closed_pipe_exits_quietly).
    """
    out, err = io.StringIO(), io.StringIO()
    with (
        mock.patch.dict(os.environ, without_keys(env), clear=True),
        mock.patch.object(sys, "stdin", io.StringIO(stdin)),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        try:
            code = main(list(args))
        except SystemExit as exited:  # argparse's exit: 2 after a usage error, 0 after --help
            code = int(exited.code or 0)
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())


def console_script(*args: str) -> subprocess.CompletedProcess[str]:
    """The real console script, in a subprocess."""
    assert SCRIPT is not None, "the requeststate console script is not installed beside this Python"
    return subprocess.run(
        [SCRIPT, *args], capture_output=True, text=True, timeout=60, check=False, env=without_keys()
    )


def token(mode: rs.Modes, state: str = '{"step":1}') -> str:
    return rs.encode(state, SECRET, mode=mode, subject="alice", tool="book", now=NOW)


def token_id(minted: str, mode: rs.Modes) -> str | None:
    """The id of a token for alice and book, as the codec reads it."""
    codec = rs.Codec(SECRET, mode=mode, metrics=None)
    return codec.open(minted, subject="alice", tool="book", now=NOW).token_id


# --- demo ---------------------------------------------------------------------------

# The demo draws a key and token ids at random: its ring's fingerprint and its tokens past their
# prefix are replaced before comparing; all else it prints is fixed.
DEMO = """\
key ring: KeyRing(keys=1, minting='<fingerprint>', ephemeral)

[signed] token (299 bytes): v1.<token>
  alice, same tool, in time    -> accepted: {"step":2,"date":"2026-12-01"}
  one character tampered       -> refused (reason for the log: bad_signature)
  expired (ttl + 1 s later)    -> refused (reason for the log: expired)
  another user (mallory)       -> refused (reason for the log: wrong_binding)

[encrypted] token (294 bytes): v1e.<token>
  alice, same tool, in time    -> accepted: {"step":2,"date":"2026-12-01"}
  one character tampered       -> refused (reason for the log: bad_signature)
  expired (ttl + 1 s later)    -> refused (reason for the log: expired)
  another user (mallory)       -> refused (reason for the log: bad_signature)

[xchacha] token (310 bytes): v1x.<token>
  alice, same tool, in time    -> accepted: {"step":2,"date":"2026-12-01"}
  one character tampered       -> refused (reason for the log: bad_signature)
  expired (ttl + 1 s later)    -> refused (reason for the log: expired)
  another user (mallory)       -> refused (reason for the log: bad_signature)
"""


def without_randomness(demo: str) -> str:
    """The demo's output with its ring's fingerprint and its tokens' bodies replaced."""
    demo = re.sub(r"(?<=minting=')[0-9a-f]{8}(?=')", "<fingerprint>", demo)
    return re.sub(r"( bytes\): v1[ex]?\.)[A-Za-z0-9_.-]+$", r"\1<token>", demo, flags=re.M)


def test_demo_shows_each_mode_accepted_and_refusals_with_reasons() -> None:
    out = io.StringIO()
    assert run_demo(out) == 0
    assert without_randomness(out.getvalue()) == DEMO


def test_demo_prints_the_ring_by_fingerprint_only() -> None:
    out = io.StringIO()
    run_demo(out)
    first = out.getvalue().splitlines()[0]
    assert (
        re.fullmatch(r"key ring: KeyRing\(keys=1, minting='[0-9a-f]{8}', ephemeral\)", first) is not None
    ), first


def test_console_script_runs_the_demo() -> None:
    done = console_script("demo")
    assert (done.returncode, without_randomness(done.stdout), done.stderr) == (0, DEMO, "")


@pytest.mark.usefixtures("measured_subprocesses")  # python -m requeststate: only a fresh interpreter runs it
def test_dunder_main_exits_with_mains_code() -> None:
    # A process of its own: under pytest, the plugin's entry point puts the package's modules
    # under assertion rewriting, whose loader runpy cannot run.
    done = subprocess.run(
        [sys.executable, "-m", "requeststate", "inspect", "hello"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=without_keys(),
    )
    assert (done.returncode, done.stderr) == (1, "not a requeststate token: no v1., v1e. or v1x. prefix\n")


def test_main_runs_the_demo(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    assert without_randomness(capsys.readouterr().out) == DEMO


@pytest.mark.usefixtures("measured_subprocesses")  # the console script's end: only a fresh interpreter
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


def test_bare_command_prints_the_help_on_stdout_and_exits_0() -> None:
    assert (run().returncode, run().stdout, run().stderr) == (0, run("--help").stdout, "")


def test_importing_the_command_line_does_not_load_mcp() -> None:
    # A fresh interpreter: the probe, the one command that needs the mcp extra, loads it when run.
    code = "import sys, requeststate.cli; print(sorted({'mcp', 'requeststate.probe'} & set(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout == "[]\n"


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
    # The usage line above it is argparse's.
    assert (done.returncode, done.stdout, done.stderr.splitlines()[-1]) == (
        2,
        "",
        "requeststate keygen: error: argument --bytes: a secret is 32 to 1024 bytes",
    )


def test_keygen_prints_the_largest_allowed_secret() -> None:
    assert len(b64decode(run("keygen", "--bytes", "1024").stdout.strip()) or b"") == 1024


def test_keygen_of_a_non_number_is_a_usage_error_naming_no_internal_function() -> None:
    done = run("keygen", "--bytes", "abc")
    assert (done.returncode, done.stdout, done.stderr.splitlines()[-1]) == (
        2,
        "",
        "requeststate keygen: error: argument --bytes: not a whole number of bytes: 'abc'",
    )


def test_probe_timeout_of_a_non_number_is_a_usage_error_naming_no_internal_function() -> None:
    done = run("probe", "--timeout", "soon", "--url", "http://127.0.0.1:9/mcp")
    assert (done.returncode, done.stdout, done.stderr.splitlines()[-1]) == (
        2,
        "",
        "requeststate probe: error: argument --timeout: not a number of seconds: 'soon'",
    )


def test_probe_ttl_of_zero_or_less_is_a_usage_error_about_seconds_not_a_timeout() -> None:
    # It said "a timeout is a positive number of seconds" of --ttl, the state's lifetime.
    done = run("probe", "--ttl", "-3", "--url", "http://127.0.0.1:9/mcp")
    assert (done.returncode, done.stdout, done.stderr.splitlines()[-1]) == (
        2,
        "",
        "requeststate probe: error: argument --ttl: not a positive number of seconds: '-3'",
    )


# --- inspect ------------------------------------------------------------------------

SIGNED_BINDING = "735647d46f10bf157afc6c5eeba091225123fa3c3204d505c22f2d9ef456f662"  # alice and book
LEFT_300 = "2033-05-18T03:38:20Z (unix 2000000300), 300 s left"


def unverified(minted: str, expires: str = LEFT_300, s: str = '"{\\"step\\":1}"') -> str:
    """What inspect prints without a key of token("signed", ...), whose payload's "s" is ``s`` as JSON."""
    minted_id = token_id(minted, "signed")
    return (
        "prefix:  v1.\n"
        f"length:  {len(minted)} characters\n"
        "mode:    signed\n"
        "UNVERIFIED (anyone can write this; set REQUESTSTATE_KEYS or pass --key-env to verify):\n"
        f"expires: {expires}\n"
        f'id:      "{minted_id}"\n'
        "minted:  2033-05-18T03:33:20Z (unix 2000000000)\n"
        "payload:\n"
        "{\n"
        f'  "s": {s},\n'
        '  "exp": 2000000300,\n'
        f'  "b": "{SIGNED_BINDING}",\n'
        f'  "id": "{minted_id}",\n'
        '  "iat": 2000000000\n'
        "}\n"
    )


def valid(minted: str, mode: rs.Mode, key_env: str) -> str:
    """What inspect prints of token(mode) verified at NOW under SECRET read from ``key_env``."""
    return (
        f"prefix:  {mode.prefix}\n"
        f"length:  {len(minted)} characters\n"
        f"VALID under KeyRing(keys=1, minting='c08b6e49') from {key_env}\n"
        f"mode:    {mode.value}\n"
        f"expires: {LEFT_300}\n"
        f'id:      "{token_id(minted, mode)}"\n'
        "minted:  2033-05-18T03:33:20Z (unix 2000000000)\n"
        'state:   "{\\"step\\":1}"\n'
    )


def test_inspect_signed_without_key_shows_the_payload_unverified() -> None:
    minted = token("signed")
    done = run("inspect", minted, "--now", str(NOW))
    assert (done.returncode, done.stdout, done.stderr) == (0, unverified(minted), "")


def test_inspect_signed_without_key_shows_expiry_id_and_time_left() -> None:
    minted = token("signed")
    done = run("inspect", minted, "--now", str(NOW + 100))
    expires = "2033-05-18T03:38:20Z (unix 2000000300), 200 s left"
    assert (done.returncode, done.stdout, done.stderr) == (0, unverified(minted, expires), "")


def test_inspect_says_how_long_ago_a_token_expired() -> None:
    minted = token("signed")
    done = run("inspect", minted, "--now", str(NOW + 400))
    expires = "2033-05-18T03:38:20Z (unix 2000000300), expired 100 s ago"
    assert (done.returncode, done.stdout, done.stderr) == (0, unverified(minted, expires), "")


@pytest.mark.parametrize("mode", list(rs.Mode), ids=str)
def test_inspect_with_key_shows_the_verified_expiry_and_id(mode: rs.Mode) -> None:
    minted = token(mode)
    args = ("inspect", minted, "--key-env", "TEST_KEYS", "--subject", "alice", "--tool", "book")
    done = run(*args, "--now", str(NOW + 1), "--leeway", "5", env=KEY_ENV)
    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        f"prefix:  {mode.prefix}\n"
        f"length:  {len(minted)} characters\n"
        f"VALID under {rs.KeyRing(SECRET)!r} from TEST_KEYS\n"
        f"mode:    {mode.value}\n"
        "expires: 2033-05-18T03:38:20Z (unix 2000000300), 299 s left\n"
        f'id:      "{token_id(minted, mode)}"\n'
        "minted:  2033-05-18T03:33:20Z (unix 2000000000)\n"
        'state:   "{\\"step\\":1}"\n',
        "",
    )


def test_inspect_reads_requeststate_keys_when_it_is_set() -> None:
    minted = token("encrypted")
    args = ("inspect", minted, "--subject", "alice", "--tool", "book", "--now", str(NOW))
    done = run(*args, env={"REQUESTSTATE_KEYS": b64(SECRET)})
    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        valid(minted, rs.Mode.ENCRYPTED, "REQUESTSTATE_KEYS"),
        "",
    )


def test_inspect_with_requeststate_keys_empty_shows_the_token_unverified() -> None:
    minted = token("signed")
    done = run("inspect", minted, "--now", str(NOW), env={"REQUESTSTATE_KEYS": ""})
    assert (done.returncode, done.stdout, done.stderr) == (0, unverified(minted), "")


def test_inspect_strips_a_trailing_newline_from_the_argument() -> None:
    minted = token("signed")
    args = ("inspect", minted + "\n", "--key-env", "TEST_KEYS", "--subject", "alice")
    done = run(*args, "--tool", "book", "--now", str(NOW), env=KEY_ENV)
    assert (done.returncode, done.stdout, done.stderr) == (0, valid(minted, rs.Mode.SIGNED, "TEST_KEYS"), "")


@pytest.mark.parametrize("text", ["v1e.!!!!", "v1e.AAAA", "v1x." + "A" * 52])
def test_inspect_of_a_malformed_sealed_token_never_says_encrypted(text: str) -> None:
    done = run("inspect", text)
    assert (done.returncode, done.stdout, done.stderr) == (
        1,
        f"prefix:  {text[:4]}\nlength:  {len(text)} characters\n",
        f"not a well-formed {text[:4]} token: the body is not a nonce and a tag in base64url\n",
    )


def test_inspect_of_a_deeply_nested_payload_refuses_it_cleanly() -> None:
    nested = b"[" * 100_000 + b"]" * 100_000
    done = run("inspect", "-", stdin="v1." + b64(nested) + "." + b64(bytes(32)))
    assert done.returncode == 1
    assert done.stderr == "not a well-formed v1. token: its payload is JSON nested too deeply\n"


def test_inspect_with_a_leeway_out_of_range_is_a_usage_error() -> None:
    done = run("inspect", token("signed"), "--key-env", "TEST_KEYS", "--leeway", "-1", env=KEY_ENV)
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        "error: leeway must be an int from 0 to 86400, got -1\n",
    )


def test_inspect_with_a_hex_key_names_the_key_encoding_option() -> None:
    done = run("inspect", token("signed"), "--key-env", "HEX", env={"HEX": SECRET.hex()})
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        "error: HEX: secret 0 looks like hex, which base64url would misread: pass encoding='hex' "
        "(on the command line: --key-encoding hex) to read it so, or use a secret from requeststate keygen\n",
    )


def test_inspect_reads_a_hex_key_with_key_encoding_hex() -> None:
    minted = token("signed")
    args = ("inspect", minted, "--key-env", "HEX", "--key-encoding", "hex", "--subject", "alice")
    done = run(*args, "--tool", "book", "--now", str(NOW), env={"HEX": SECRET.hex()})
    assert (done.returncode, done.stdout, done.stderr) == (0, valid(minted, rs.Mode.SIGNED, "HEX"), "")


def test_inspect_escapes_control_characters_in_the_unverified_payload() -> None:
    minted = token("signed", "\x1b[31mred")
    done = run("inspect", minted, "--now", str(NOW))
    expected = unverified(minted, s='"\\u001b[31mred"')
    assert (done.returncode, done.stdout, done.stderr) == (0, expected, "")


@pytest.mark.parametrize("mode", ["encrypted", "xchacha"])
def test_inspect_encrypted_without_key_shows_only_mode_and_size(mode: rs.ModeName) -> None:
    minted = token(mode, "top-secret")
    done = run("inspect", minted)
    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        f"prefix:  {minted[:4]}\n"
        f"length:  {len(minted)} characters\n"
        f"mode:    {mode}\n"
        "state:   sealed: set REQUESTSTATE_KEYS or pass --key-env to verify and read it,\n"
        "         with its expiry and id\n",
        "",
    )


# What the binding hint says of a token protect() minted, which the flags cannot name.
PROTECT_NOTE = (
    "A token that requeststate.mcp's protect() minted is bound to its request (method, target, "
    "arguments, audience, principal), which --subject and --tool do not name, except under "
    "bind='mcpd': --subject the access token's sub, --tool the tool's name"
)


def hint_lines(hint: str) -> str:
    """``hint`` as inspect prints it: wrapped at 100 columns under ``hint:``."""
    return textwrap.fill(hint, width=100, initial_indent="hint:    ", subsequent_indent=" " * 9) + "\n"


def sealed_hint(minted: str, missing: str) -> str:
    """The binding hint of a sealed token refused for want of ``missing`` (flags)."""
    return (
        f"the tag of a {minted[:4]} token also binds the subject and tool it was minted for: without them, "
        f"the right key is refused as a wrong one is; pass {missing} as encode() was given them. "
        + PROTECT_NOTE
    )


def refused_sealed(minted: str, missing: str) -> str:
    """What inspect prints of a sealed token refused under TEST_KEYS with the binding hint."""
    return (
        f"prefix:  {minted[:4]}\n"
        f"length:  {len(minted)} characters\n"
        "REFUSED under TEST_KEYS: bad_signature\n" + hint_lines(sealed_hint(minted, missing))
    )


def test_inspect_with_key_prints_the_refusal_reason_and_exits_1() -> None:
    minted = token("encrypted")
    args = ("inspect", minted, "--key-env", "TEST_KEYS", "--subject", "mallory", "--now", str(NOW))
    done = run(*args, env=KEY_ENV)
    assert (done.returncode, done.stdout, done.stderr) == (
        1,
        refused_sealed(minted, "--tool"),
        "",
    )


def test_inspect_reads_the_token_from_stdin() -> None:
    minted = token("signed")
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
    done = run(*args, stdin=minted + "\n", env=KEY_ENV)
    assert (done.returncode, done.stdout, done.stderr) == (0, valid(minted, rs.Mode.SIGNED, "TEST_KEYS"), "")


UNSET_KEYS = (
    "error: UNSET_REQUESTSTATE_KEYS is not set, or empty: set it to base64url secrets separated by commas, "
    "newest first (generate one with: requeststate keygen)\n"
)


def test_inspect_with_an_unset_key_variable_exits_2_naming_it() -> None:
    done = run("inspect", token("signed"), "--key-env", "UNSET_REQUESTSTATE_KEYS")
    assert (done.returncode, done.stdout, done.stderr) == (2, "", UNSET_KEYS)


def test_inspect_with_a_bad_key_value_never_prints_it() -> None:
    done = run("inspect", token("signed"), "--key-env", "BAD", env={"BAD": "c2hvcnQ"})
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        "error: BAD: secret 0 is 5 bytes; each secret must be at least 32 bytes of secret randomness\n",
    )


@pytest.mark.parametrize("text", ["hello", "v2.abc", ""])
def test_inspect_of_a_non_token_exits_1(text: str) -> None:
    done = run("inspect", text)
    assert (done.returncode, done.stdout, done.stderr) == (
        1,
        "",
        "not a requeststate token: no v1., v1e. or v1x. prefix\n",
    )


def test_inspect_of_an_unreadable_signed_payload_exits_1() -> None:
    done = run("inspect", "v1.!!!.x")
    assert (done.returncode, done.stderr) == (
        1,
        "not a well-formed v1. token: the body is not a payload and a MAC in base64url\n",
    )


def test_inspect_of_a_signed_payload_that_is_not_json_exits_1() -> None:
    done = run("inspect", "v1." + b64(b"not json") + "." + b64(bytes(32)))
    assert (done.returncode, done.stderr) == (
        1,
        "not a well-formed v1. token: the payload is not readable JSON\n",
    )


@pytest.mark.parametrize("mode", ["encrypted", "xchacha"])
def test_inspect_of_an_encrypted_token_without_subject_and_tool_hints_at_them(mode: rs.ModeName) -> None:
    minted = token(mode)
    done = run("inspect", minted, "--key-env", "TEST_KEYS", "--now", str(NOW), env=KEY_ENV)
    assert (done.returncode, done.stdout, done.stderr) == (
        1,
        refused_sealed(minted, "--subject and --tool"),
        "",
    )


def test_inspect_of_a_signed_token_without_subject_and_tool_hints_at_them() -> None:
    # Its wrong_binding came without the hint an encrypted token's bad_signature had.
    minted = token("signed")
    done = run("inspect", minted, "--key-env", "TEST_KEYS", "--now", str(NOW), env=KEY_ENV)
    assert (done.returncode, done.stdout, done.stderr) == (
        1,
        "prefix:  v1.\n"
        f"length:  {len(minted)} characters\n"
        "REFUSED under TEST_KEYS: wrong_binding\n"
        + hint_lines(
            "a v1. token is bound to the subject and tool it was minted for: pass --subject and --tool as "
            f"encode() was given them. {PROTECT_NOTE}"
        ),
        "",
    )


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
        "minted",
        "seconds_left",
        "id",
        "state",
    )
)


def refused_json(minted: str, key_env: str, reason: str, **found: object) -> dict[str, object]:
    """The JSON of a token refused under ``key_env`` for ``reason``, with what else was ``found``."""
    prefix = minted[: minted.index(".") + 1]
    return {
        **NOTHING_FOUND,
        "prefix": prefix,
        "length": len(minted),
        "verified": False,
        "reason": reason,
        "key_env": key_env,
        **found,
    }


def test_inspect_hint_names_only_the_flag_not_given() -> None:
    minted = token("encrypted")
    args = (minted, "--key-env", "TEST_KEYS", "--subject", "alice", "--now", str(NOW))
    assert inspect_json(*args, env=KEY_ENV) == (
        1,
        refused_json(minted, "TEST_KEYS", "bad_signature", hint=sealed_hint(minted, "--tool")),
    )


def test_inspect_gives_no_hint_when_subject_and_tool_were_given() -> None:
    minted = token("encrypted")
    args = (minted, "--key-env", "OTHER", "--subject", "alice", "--tool", "book", "--now", str(NOW))
    found = inspect_json(*args, env={"OTHER": b64(OTHER_SECRET)})
    assert found == (1, refused_json(minted, "OTHER", "bad_signature"))


def test_inspect_of_an_expired_token_gives_no_binding_hint() -> None:
    minted = token("signed")
    args = (
        minted,
        "--key-env",
        "TEST_KEYS",
        "--now",
        str(NOW + 10**6),
        "--subject",
        "alice",
        "--tool",
        "book",
    )
    assert inspect_json(*args, env=KEY_ENV) == (
        1,
        refused_json(
            minted,
            "TEST_KEYS",
            "expired",
            exp=NOW + 300,
            expires="2033-05-18T03:38:20Z",
            seconds_left=300 - 10**6,
        ),
    )


def test_inspect_of_a_signed_token_under_a_wrong_key_gives_no_binding_hint() -> None:
    # A v1. MAC does not cover the identity: its bad_signature is a wrong key (or a forgery).
    minted = token("signed")
    found = inspect_json(minted, "--key-env", "OTHER", "--now", str(NOW), env={"OTHER": b64(OTHER_SECRET)})
    assert found == (1, refused_json(minted, "OTHER", "bad_signature"))


def protected_token(mode: rs.ModeName, **options: Any) -> str:
    """A first round of tool ``book`` (restaurant Ada) for alice, sealed by a real ``protect()`` boundary."""
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    import anyio

    from requeststate.mcp import Boundary
    from tests.support.mcp_flow import seal_round

    boundary = Boundary(rs.Codec(SECRET, mode=mode, metrics=None), subject=lambda ctx: "alice", **options)
    params = {"name": "book", "arguments": {"restaurant": "Ada"}}
    return anyio.run(seal_round, boundary, params)


@pytest.mark.parametrize("mode", ["signed", "encrypted"])
def test_inspect_hint_says_a_token_protect_minted_cannot_be_verified_by_the_flags(mode: rs.ModeName) -> None:
    # The hint once said "pass --subject and --tool as at mint": no flags name what protect() binds.
    minted = protected_token(mode, audience="booking")
    reason = "wrong_binding" if mode == "signed" else "bad_signature"
    code, found = inspect_json(minted, "--key-env", "TEST_KEYS", env=KEY_ENV)
    assert (code, found["reason"]) == (1, reason)
    assert isinstance(found["hint"], str)
    assert found["hint"].endswith(PROTECT_NOTE)
    # As the hint says: the user and the tool a reader would pass are refused too.
    flags = ("--subject", "alice", "--tool", "book")
    assert inspect_json(minted, "--key-env", "TEST_KEYS", *flags, env=KEY_ENV) == (
        1,
        refused_json(minted, "TEST_KEYS", reason),
    )


def test_inspect_verifies_a_token_protect_minted_under_bind_mcpd_with_the_sub_and_the_tool_name() -> None:
    # The one exception the hint names: mcp.d's identity is encode()'s (subject=sub, tool=name).
    minted = protected_token("encrypted", bind="mcpd")
    flags = ("--subject", "alice", "--tool", "book")
    code, found = inspect_json(minted, "--key-env", "TEST_KEYS", *flags, env=KEY_ENV)
    assert (code, found["verified"], found["reason"]) == (0, True, None)


@pytest.mark.parametrize("mode", list(rs.Mode), ids=str)
def test_inspect_json_of_a_verified_token_holds_its_claims_and_the_rings_fingerprint(mode: rs.Mode) -> None:
    minted = token(mode)
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
            "id": token_id(minted, mode),
            "minted": NOW,
            "state": '{"step":1}',
        },
    )


def test_inspect_json_of_a_refused_token_gives_the_reason_and_exits_1() -> None:
    minted = token("signed")
    args = (minted, "--key-env", "TEST_KEYS", "--subject", "mallory", "--tool", "book", "--now", str(NOW))
    assert inspect_json(*args, env=KEY_ENV) == (1, refused_json(minted, "TEST_KEYS", "wrong_binding"))


def test_inspect_json_without_a_key_gives_a_signed_tokens_claims_unverified() -> None:
    minted = token("signed")
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
            "id": token_id(minted, "signed"),
            "minted": NOW,
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


@pytest.mark.parametrize(
    ("text", "prefix"), [("hello", None), ("v1e.!!!!", "v1e."), ("v1." + b64(b"not json") + ".x", "v1.")]
)
def test_inspect_json_of_what_is_no_readable_token_says_malformed_on_stdout(
    text: str, prefix: str | None
) -> None:
    assert inspect_json(text) == (
        1,
        {**NOTHING_FOUND, "prefix": prefix, "length": len(text), "verified": False, "reason": "malformed"},
    )


def test_inspect_json_escapes_the_unverified_content_it_shows() -> None:
    # ESC and the one-character CSI (U+009B), which some terminals obey too.
    payload = json.dumps({"s": "\x1b[31mred", "exp": NOW, "b": "0" * 64, "id": "\u009b2J"}).encode()
    minted = "v1." + b64(payload) + "." + b64(bytes(32))
    done = run("inspect", minted, "--json", "--now", str(NOW))
    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        "{\n"
        '  "prefix": "v1.",\n'
        '  "mode": "signed",\n'
        f'  "length": {len(minted)},\n'
        '  "verified": false,\n'
        '  "reason": null,\n'
        '  "hint": null,\n'
        '  "key_env": null,\n'
        '  "fingerprint": null,\n'
        '  "exp": 2000000000,\n'
        '  "expires": "2033-05-18T03:33:20Z",\n'
        '  "seconds_left": 0,\n'
        '  "id": "\\u009b2J",\n'
        '  "minted": null,\n'
        '  "state": "\\u001b[31mred"\n'
        "}\n",
        "",
    )


def test_inspect_json_with_a_key_that_cannot_be_read_prints_no_json() -> None:
    done = run("inspect", token("signed"), "--json", "--key-env", "UNSET_REQUESTSTATE_KEYS")
    assert (done.returncode, done.stdout, done.stderr) == (2, "", UNSET_KEYS)


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
    ("args", "env", "error"),
    [
        (
            (),
            {},
            "REQUESTSTATE_KEYS is not set, or empty: set it to base64url secrets separated by commas, "
            "newest first (generate one with: requeststate keygen)",
        ),
        (
            ("--key-env", "K"),
            {"K": "c2hvcnQ"},
            "K: secret 0 is 5 bytes; each secret must be at least 32 bytes of secret randomness",
        ),
        (
            ("--key-env", "K"),
            {"K": b64(b"ab" * 16)},
            "K: secret 0 is a short pattern repeated, not secret randomness: use 32 random bytes: "
            "requeststate keygen, or os.urandom(32)",
        ),
        (
            ("--key-env", "K"),
            {"K": SECRET.hex()},
            "K: secret 0 looks like hex, which base64url would misread: pass encoding='hex' (on the command "
            "line: --key-encoding hex) to read it so, or use a secret from requeststate keygen",
        ),
        (("--key-env", "TEST_KEYS", "--ttl", "0"), KEY_ENV, "ttl must be an int from 1 to 86400, got 0"),
        (
            ("--key-env", "TEST_KEYS", "--ttl", "86401"),
            KEY_ENV,
            "ttl must be an int from 1 to 86400, got 86401",
        ),
        (
            ("--key-env", "TEST_KEYS", "--now", str(2**63)),
            KEY_ENV,
            "now must be an int from -2**63 to 2**63-1, got 9223372036854775808",
        ),
        (
            ("--key-env", "TEST_KEYS", "--subject", '{"sub":"x"}'),
            KEY_ENV,
            "a subject bound without a tool must not start with '{' (it would read as a payload)",
        ),
    ],
    ids=["no-keys", "short-key", "low-entropy-key", "hex-key", "ttl-0", "ttl-day+1", "now", "identity"],
)
def test_mint_that_cannot_mint_exits_2_saying_why_without_a_traceback(
    args: tuple[str, ...], env: dict[str, str], error: str
) -> None:
    done = run("mint", "x", *args, env=env)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"error: {error}\n")


def test_inspect_escapes_control_characters_in_an_unverified_id() -> None:
    # The id of an unverified v1. payload is anyone's to write; it once reached the terminal raw.
    payload = json.dumps({"s": "x", "exp": NOW, "b": "0" * 64, "id": "\x1b]0;PWNED\x07\x1b[2J"}).encode()
    minted = "v1." + b64(payload) + "." + b64(bytes(32))
    done = run("inspect", minted, "--now", str(NOW), env={"REQUESTSTATE_KEYS": ""})
    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        "prefix:  v1.\n"
        f"length:  {len(minted)} characters\n"
        "mode:    signed\n"
        "UNVERIFIED (anyone can write this; set REQUESTSTATE_KEYS or pass --key-env to verify):\n"
        "expires: 2033-05-18T03:33:20Z (unix 2000000000), 0 s left\n"
        'id:      "\\u001b]0;PWNED\\u0007\\u001b[2J"\n'
        "minted:  not given\n"
        "payload:\n"
        "{\n"
        '  "s": "x",\n'
        '  "exp": 2000000000,\n'
        f'  "b": "{"0" * 64}",\n'
        '  "id": "\\u001b]0;PWNED\\u0007\\u001b[2J"\n'
        "}\n",
        "",
    )


EXPIRED_ARGS = ("--key-env", "TEST_KEYS", "--subject", "alice", "--tool", "book", "--now", str(NOW + 400))


@pytest.mark.parametrize("mode", list(rs.Mode), ids=str)
def test_inspect_under_the_key_says_when_an_expired_token_expired(mode: rs.Mode) -> None:
    # Before: "REFUSED ...: expired" with no expiry, though without the key a signed token showed it.
    minted = token(mode)
    done = run("inspect", minted, *EXPIRED_ARGS, env=KEY_ENV)
    assert (done.returncode, done.stdout, done.stderr) == (
        1,
        f"prefix:  {mode.prefix}\n"
        f"length:  {len(minted)} characters\n"
        "REFUSED under TEST_KEYS: expired\n"
        "expires: 2033-05-18T03:38:20Z (unix 2000000300), expired 100 s ago\n",
        "",
    )


@pytest.mark.parametrize("mode", list(rs.Mode), ids=str)
def test_inspect_json_under_the_key_gives_an_expired_tokens_expiry(mode: rs.Mode) -> None:
    # Before: "exp": null.
    minted = token(mode)
    assert inspect_json(minted, *EXPIRED_ARGS, env=KEY_ENV) == (
        1,
        refused_json(
            minted, "TEST_KEYS", "expired", exp=NOW + 300, expires="2033-05-18T03:38:20Z", seconds_left=-100
        ),
    )


def test_inspect_of_a_signed_token_expired_and_of_another_identity_says_wrong_binding() -> None:
    # Another identity's token, whenever it expired: its expiry is not this identity's to know.
    minted = token("signed")
    args = (minted, "--key-env", "TEST_KEYS", "--subject", "bob", "--tool", "book", "--now", str(NOW + 400))
    assert inspect_json(*args, env=KEY_ENV) == (1, refused_json(minted, "TEST_KEYS", "wrong_binding"))


def test_docs_name_every_option_of_probe_help() -> None:
    # Catches: an option added to `requeststate probe` (or renamed) that docs/cli.md's table omits.
    parser = argparse.ArgumentParser()
    add_probe(parser.add_subparsers())
    (probe,) = (action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
    offered = {
        option
        for action in probe.choices["probe"]._actions
        for option in action.option_strings
        if option.startswith("--") and option != "--help"
    }
    section = (
        (ROOT / "docs" / "cli.md")
        .read_text(encoding="utf-8")
        .partition("\n## probe\n")[2]
        .partition("\n## ")[0]
    )
    documented = {
        option
        for row in re.findall(r"^\| (`-.*?) \|", section, re.MULTILINE)
        for option in re.findall(r"`(--[a-z0-9-]+)", row)
        if option != "--"
    }
    assert documented == offered
