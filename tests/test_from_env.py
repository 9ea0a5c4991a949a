"""Configuration from the environment: ``KeyRing.from_env`` and ``Codec.from_env``.

A secret is never read in an encoding other than the one it was written in,
and no error message contains a secret.
"""

from __future__ import annotations

import base64
import hashlib
import inspect
import logging
import pydoc
import re

import pytest

import requeststate as rs
from tests.conftest import NOW, OTHER_SECRET, SECRET
from tests.support.reference import b64

# A secret whose standard base64 has both "+" and "/" (and so differs from its base64url).
STANDARD_SECRET = hashlib.sha256(b"standard base64 3").digest()
assert {"+", "/"} <= set(base64.b64encode(STANDARD_SECRET).decode())
NAME = "MY_KEYS"


def ring_from(value: str, **options: object) -> rs.KeyRing:
    return rs.KeyRing.from_env(NAME, environ={NAME: value}, **options)  # type: ignore[arg-type]


def fingerprint(secret: bytes) -> str:
    return rs.KeyRing(secret).fingerprint


# --- KeyRing.from_env: reading --------------------------------------------------------------------


def test_secrets_are_read_newest_first() -> None:
    ring = ring_from(f"{b64(SECRET)},{b64(OTHER_SECRET)}")
    assert repr(ring) == f"KeyRing(keys=2, minting={fingerprint(SECRET)!r})"


def test_padding_and_spaces_around_each_secret_are_accepted() -> None:
    padded = base64.urlsafe_b64encode(SECRET).decode()
    assert padded.endswith("=")
    ring = ring_from(f" {padded} , {b64(OTHER_SECRET)}")
    assert repr(ring) == f"KeyRing(keys=2, minting={fingerprint(SECRET)!r})"


def test_the_variable_defaults_to_requeststate_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REQUESTSTATE_KEYS", b64(SECRET))
    assert rs.KeyRing.from_env().fingerprint == fingerprint(SECRET)


def test_default_reads_base64url_as_keygen_prints_it() -> None:
    assert ring_from(b64(STANDARD_SECRET)).fingerprint == fingerprint(STANDARD_SECRET)


def test_a_trailing_x_of_a_secret_is_kept() -> None:
    # 33 bytes: base64url "...X" with no padding and no unused bits.
    secret = hashlib.sha256(b"trailing x").digest() + b"\x17"
    assert b64(secret).endswith("X")
    assert ring_from(b64(secret)).fingerprint == fingerprint(secret)


def test_explicit_base64url_reads_64_hex_digits_as_base64url() -> None:
    # Named explicitly, the text is read as written: no guessing either way.
    text = SECRET.hex()
    assert ring_from(text, encoding="base64url").fingerprint == fingerprint(base64.urlsafe_b64decode(text))


def test_encoding_hex_reads_the_32_bytes_the_hex_spells() -> None:
    assert ring_from(SECRET.hex(), encoding="hex").fingerprint == fingerprint(SECRET)


def test_encoding_hex_reads_upper_case_digits() -> None:
    assert ring_from(SECRET.hex().upper(), encoding="hex").fingerprint == fingerprint(SECRET)


@pytest.mark.parametrize("tail", [b"xy", b"xyz"], ids=["two '='", "one '='"])
def test_encoding_base64_reads_standard_base64_padded_or_not(tail: bytes) -> None:
    secret = STANDARD_SECRET + tail
    padded = base64.b64encode(secret).decode()
    assert padded.endswith("=")
    for text in (padded, padded.rstrip("=")):
        assert ring_from(text, encoding="base64").fingerprint == fingerprint(secret)


def test_the_aesgcm_limit_reaches_the_ring() -> None:
    ring = ring_from(b64(SECRET), aesgcm_limit=1)
    rs.encode("x", ring, mode="encrypted")
    with pytest.raises(rs.KeyBudgetExhausted, match="has sealed its limit of 1"):
        rs.encode("x", ring, mode="encrypted")


def test_the_warn_share_reaches_the_ring(caplog: pytest.LogCaptureFixture) -> None:
    ring = ring_from(b64(SECRET), aesgcm_limit=10, aesgcm_warn_share=0.1)
    with caplog.at_level("WARNING", logger="requeststate"):
        rs.encode("x", ring, mode="encrypted")
    assert caplog.record_tuples == [
        (
            "requeststate",
            logging.WARNING,
            f"requestState key {fingerprint(SECRET)} has sealed 1 AES-GCM tokens in this process, "
            "of a limit of 10: rotate to a new secret, or move to mode='xchacha'",
        )
    ]


# --- KeyRing.from_env: refusals -------------------------------------------------------------------


@pytest.mark.parametrize("value", [None, "", "  "], ids=["unset", "empty", "blank"])
def test_an_unset_variable_is_refused_saying_how_to_make_a_secret(value: str | None) -> None:
    environ = {} if value is None else {NAME: value}
    with pytest.raises(
        ValueError,
        match=r"^MY_KEYS is not set, or empty: set it to base64url secrets separated by commas, newest first "
        r"\(generate one with: requeststate keygen\)$",
    ):
        rs.KeyRing.from_env(NAME, environ=environ)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("not base64!", "MY_KEYS: secret 0 is not base64url"),
        (
            f"{b64(SECRET)},a+b/",
            "MY_KEYS: secret 1 looks like standard base64 ('+' or '/'), not base64url: pass "
            "encoding='base64' (on the command line: --key-encoding base64) to read it so, "
            "or use a secret from requeststate keygen",
        ),
        (
            b64(STANDARD_SECRET[:16]),
            "MY_KEYS: secret 0 is 16 bytes; each secret must be at least 32 bytes of secret randomness",
        ),
        (f"{b64(SECRET)},{b64(SECRET)}", "MY_KEYS: secret 1 repeats an earlier secret"),
        (
            f"{b64(SECRET)},",
            "MY_KEYS: secret 1 is 0 bytes; each secret must be at least 32 bytes of secret randomness",
        ),
        (
            b64(b"k" * 32),
            "MY_KEYS: secret 0 is one byte repeated, not secret randomness: use 32 random bytes: "
            "requeststate keygen, or os.urandom(32)",
        ),
    ],
    ids=["not base64url", "standard base64", "short", "repeated", "empty item", "low entropy"],
)
def test_an_unusable_secret_is_refused_naming_the_variable_and_position_never_the_value(
    value: str, message: str
) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        ring_from(value)


@pytest.mark.parametrize("character", ["+", "/"])
def test_default_refuses_standard_base64_naming_the_option(character: str) -> None:
    # One character of the standard alphabet is enough to tell.
    text = base64.urlsafe_b64encode(STANDARD_SECRET).decode()
    text = text[:10] + character + text[11:]
    with pytest.raises(
        ValueError,
        match=r"^MY_KEYS: secret 0 looks like standard base64 \('\+' or '/'\), not base64url: "
        r"pass encoding='base64' \(on the command line: --key-encoding base64\) to read it so, "
        r"or use a secret from requeststate keygen$",
    ):
        ring_from(text)


HEX_HINT = (
    "MY_KEYS: secret 0 looks like hex, which base64url would misread: pass encoding='hex' "
    "(on the command line: --key-encoding hex) to read it so, or use a secret from requeststate keygen"
)


def test_default_refuses_64_hex_digits_naming_the_option() -> None:
    # 64 hex digits are valid base64url too: read so, they would be 48 other bytes.
    with pytest.raises(
        ValueError,
        match=r"^MY_KEYS: secret 1 looks like hex, which base64url would misread: pass encoding='hex' "
        r"\(on the command line: --key-encoding hex\) to read it so, "
        r"or use a secret from requeststate keygen$",
    ):
        ring_from(f"{b64(OTHER_SECRET)},{SECRET.hex()}")


def test_default_refuses_upper_case_hex_too() -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(HEX_HINT)}$"):
        ring_from(SECRET.hex().upper())


@pytest.mark.parametrize("digits", [48, 63, 96])
def test_default_refuses_hex_digits_of_any_length(digits: int) -> None:
    # Before: fewer than 64 were read as base64url, without a word: 48 hex digits became a 36-byte
    # key, and a service that reads them as hex (24 bytes) derives other keys.
    with pytest.raises(ValueError, match=f"^{re.escape(HEX_HINT)}$"):
        ring_from((SECRET * 2).hex()[:digits])


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        (SECRET.hex() + "0", "hex"),
        (SECRET.hex()[:32] + " " + SECRET.hex()[32:], "hex"),  # bytes.fromhex alone would skip it
        (SECRET.hex()[:-1] + "g", "hex"),
        (b64(STANDARD_SECRET), "base64"),
        (base64.b64encode(STANDARD_SECRET).decode(), "base64url"),
    ],
    ids=["odd hex digits", "space in hex", "not a hex digit", "base64url as base64", "base64 as base64url"],
)
def test_a_secret_not_in_the_named_encoding_is_refused(text: str, encoding: str) -> None:
    with pytest.raises(ValueError, match=rf"^MY_KEYS: secret 0 is not {encoding}$"):
        ring_from(text, encoding=encoding)


def test_an_unknown_encoding_is_refused_naming_the_choices() -> None:
    with pytest.raises(
        ValueError, match=r"^encoding must be one of 'base64url', 'base64', 'hex', got 'utf-8'$"
    ):
        ring_from(b64(SECRET), encoding="utf-8")


# --- Codec.from_env -------------------------------------------------------------------------------

KEYS = {"REQUESTSTATE_KEYS": b64(SECRET)}


def test_codec_from_env_reads_the_keys_and_defaults_to_encrypted_five_minute_tokens() -> None:
    codec = rs.Codec.from_env(environ=KEYS)
    assert (codec.keys.fingerprint, codec.modes, codec.ttl) == (
        fingerprint(SECRET),
        (rs.Mode.ENCRYPTED,),
        300,
    )


def test_codec_from_env_takes_mode_and_ttl_when_the_variables_are_unset() -> None:
    codec = rs.Codec.from_env(environ={**KEYS, "REQUESTSTATE_TTL": " "}, mode="xchacha", ttl=77)
    assert (codec.modes, codec.ttl) == ((rs.Mode.XCHACHA,), 77)


def test_codec_from_env_variables_win_over_mode_and_ttl() -> None:
    environ = {**KEYS, "REQUESTSTATE_MODE": " signed , encrypted ", "REQUESTSTATE_TTL": " 60 "}
    codec = rs.Codec.from_env(environ=environ, mode="xchacha", ttl=77)
    assert (codec.modes, codec.ttl) == ((rs.Mode.SIGNED, rs.Mode.ENCRYPTED), 60)


def test_codec_from_env_passes_the_other_options_on() -> None:
    guard = rs.MemoryGuard()
    codec = rs.Codec.from_env(environ=KEYS, leeway=3, guard=guard)
    token = codec.encode("x", now=NOW)
    assert codec.decode(token, now=NOW + 303) == "x"
    assert codec.decode(token, now=NOW + 303) is None


def test_codec_from_env_reads_the_process_environment_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REQUESTSTATE_KEYS", b64(OTHER_SECRET))
    monkeypatch.setenv("REQUESTSTATE_MODE", "signed")
    monkeypatch.setenv("REQUESTSTATE_TTL", "61")
    codec = rs.Codec.from_env()
    assert (codec.keys.fingerprint, codec.modes, codec.ttl) == (
        fingerprint(OTHER_SECRET),
        (rs.Mode.SIGNED,),
        61,
    )


def test_codec_from_env_shows_no_secret_in_its_help(monkeypatch: pytest.MonkeyPatch) -> None:
    # A default of os.environ put every variable, the keys included, in help() and inspect.signature.
    monkeypatch.setenv("REQUESTSTATE_KEYS", b64(OTHER_SECRET))
    signature = inspect.signature(rs.Codec.from_env)
    assert signature.parameters["environ"].default is None
    assert b64(OTHER_SECRET) not in str(signature)
    assert b64(OTHER_SECRET) not in pydoc.plain(pydoc.render_doc(rs.Codec))


def test_codec_from_env_without_keys_is_refused_naming_the_variable() -> None:
    with pytest.raises(ValueError, match=r"^REQUESTSTATE_KEYS is not set, or empty: "):
        rs.Codec.from_env(environ={"REQUESTSTATE_MODE": "signed"})


@pytest.mark.parametrize("mode", ["aes", "signed,", ",", "signed,rot13"])
def test_codec_from_env_refuses_an_unknown_mode_saying_how_to_set_it(mode: str) -> None:
    with pytest.raises(
        ValueError,
        match=r"^REQUESTSTATE_MODE must name modes among signed, encrypted, xchacha, comma-separated "
        r"while migrating \(the first mints\); its value is none of these: set it as "
        r"REQUESTSTATE_MODE=encrypted, or REQUESTSTATE_MODE=encrypted,signed$",
    ):
        rs.Codec.from_env(environ={**KEYS, "REQUESTSTATE_MODE": mode})


@pytest.mark.parametrize("ttl", ["0", "86401", "1e3", "-5", "1.5", "\u0663", "300s", "0000300", "7" * 5000])
def test_codec_from_env_refuses_a_ttl_that_is_not_whole_seconds_up_to_a_day(ttl: str) -> None:
    # Before: 5,000 digits raised int()'s own error, which names no variable.
    with pytest.raises(
        ValueError,
        match=r"^REQUESTSTATE_TTL must be whole seconds from 1 to 86400 \(a day\); its value is not: "
        r"set it as REQUESTSTATE_TTL=300, for five minutes$",
    ):
        rs.Codec.from_env(environ={**KEYS, "REQUESTSTATE_TTL": ttl})


@pytest.mark.parametrize("ttl", [1, 86_400])
def test_codec_from_env_accepts_a_ttl_from_a_second_to_a_day(ttl: int) -> None:
    assert rs.Codec.from_env(environ={**KEYS, "REQUESTSTATE_TTL": str(ttl)}).ttl == ttl


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "REQUESTSTATE_TTL",
            "REQUESTSTATE_TTL must be whole seconds from 1 to 86400 (a day); its value is not: "
            "set it as REQUESTSTATE_TTL=300, for five minutes",
        ),
        (
            "REQUESTSTATE_MODE",
            "REQUESTSTATE_MODE must name modes among signed, encrypted, xchacha, comma-separated while "
            "migrating (the first mints); its value is none of these: set it as REQUESTSTATE_MODE=encrypted, "
            "or REQUESTSTATE_MODE=encrypted,signed",
        ),
    ],
    ids=["REQUESTSTATE_TTL", "REQUESTSTATE_MODE"],
)
def test_a_variable_refused_never_shows_its_value(name: str, message: str) -> None:
    # Before: a key pasted into REQUESTSTATE_MODE appeared whole in the error, and so in the log.
    pasted = "Qm9hcmRpbmctcGFzcy1rZXktMTIzNDU2Nzg5MDEyMzQ1Ng"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        rs.Codec.from_env(environ={**KEYS, name: pasted})
