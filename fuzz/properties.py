"""The properties the fuzzer checks on ``verify`` and ``decode``, importable without atheris.

One fuzz input (bytes) describes one case: the verifier's configuration (modes,
identity, clock, leeway, ``type=``, size limit, guard or not) from a fixed
header, and the token from the rest: raw text, a non-``str`` object, or a token
the harness mints from the input and then edits. ``check_input`` runs the case
and raises ``PropertyViolation`` when one of these breaks:

1. ``decode`` never raises for what the client sent, and returns ``None``
   exactly when ``verify`` refuses;
2. ``verify`` raises nothing but ``InvalidToken``, with a ``Reason``;
3. nothing is accepted that the harness did not mint, and what is accepted
   matches how it was minted: a mode asked for, the same identity, not
   expired, within the size limit, the same state;
4. a minted token is accepted wherever 3 allows it (no false refusals);
5. with a guard, the same token is refused as ``replayed`` the second time;
6. a token the harness seals around arbitrary payload bytes (with the real key,
   through the independent ``tests/support/reference.py``) is accepted exactly when
   docs/wire-format.md's payload rules, checked here with the standard library, accept it.

Minting is deterministic (fixed key, clock and "random" bytes), so an input
means the same case in every process: the committed corpus replays as plain
tests (``tests/test_fuzz_corpus.py``) with no atheris installed. The byte
layout is ours, not ``atheris.FuzzedDataProvider``'s, for that reason.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Final

import msgspec

import requeststate as rs
from requeststate._envelope import seal_token
from requeststate._modes import wire_modes
from requeststate._token_id import TOKEN_ID_BYTES
from tests.support import reference

__all__ = [
    "HEADER_BYTES",
    "NOW",
    "RING",
    "Case",
    "PropertyViolation",
    "case_of",
    "check_case",
    "check_input",
    "seed_inputs",
]

SECRET: Final = hashlib.sha256(b"requeststate fuzz secret").digest()
OLD_SECRET: Final = hashlib.sha256(b"requeststate fuzz old secret").digest()
# Two keys: the first mints, both verify. Seeds are also minted under the old one.
RING: Final = rs.KeyRing(SECRET, OLD_SECRET)
OLD_RING: Final = rs.KeyRing(OLD_SECRET)
NOW: Final = 2_000_000_000
TTL: Final = 300
INT64_MAX: Final = 2**63 - 1
INT64_MIN: Final = -(2**63)

MODES: Final = tuple(rs.Mode)
# Every non-empty choice of modes: one mode alone (as the enum or its string), or a tuple.
MODE_CHOICES: Final[tuple[rs.Mode | str | tuple[rs.Mode | str, ...], ...]] = (
    rs.Mode.SIGNED,
    rs.Mode.ENCRYPTED,
    rs.Mode.XCHACHA,
    (rs.Mode.SIGNED, rs.Mode.ENCRYPTED),
    (rs.Mode.ENCRYPTED, rs.Mode.XCHACHA),
    (rs.Mode.SIGNED, rs.Mode.XCHACHA),
    ("signed", "encrypted", "xchacha"),
    "encrypted",
)
VALID_IDENTITIES: Final[tuple[tuple[str, str | None], ...]] = (
    ("", None),
    ("alice", None),
    ("alice", "book"),
    ("", "book"),
    ("bob", "book"),
    ("alice", ""),
    ("ålice ☃", "bøøk"),
)
# Identities a verifier may be handed that no token can be bound to: a refusal, never an error.
INVALID_IDENTITIES: Final[tuple[tuple[str, str | None], ...]] = (
    ("ali\0ce", None),
    ("alice", "bo\0ok"),
    ("\udc80", None),
    ("alice", "\ud800"),
)
IDENTITIES: Final = VALID_IDENTITIES + INVALID_IDENTITIES
NOW_OFFSETS: Final = (0, 1, TTL - 1, TTL, TTL + 1, -1, -(10**9), 10**12, INT64_MAX - NOW, INT64_MIN - NOW)
LEEWAYS: Final = (0, 1, TTL, rs.MAX_TTL)  # up to the largest leeway a codec takes


class Booking(msgspec.Struct):
    step: int
    date: str


TYPES: Final[tuple[Any, ...]] = (None, object, Booking, dict[str, int])
SMALL_MAX_TOKEN_BYTES: Final = 200
STATES: Final = ("state", '{"step":1,"date":"2026-12-01"}', "", '{"a":1}')

HEADER_BYTES: Final = 5
KIND_TEXT, KIND_OBJECT, KIND_MINT, KIND_SEAL = 0, 1, 2, 3


class PropertyViolation(AssertionError):
    """A property of ``verify``/``decode`` does not hold for this input."""


@dataclass(frozen=True)
class Minted:
    """How the harness minted a token."""

    mode: rs.Mode
    subject: str
    tool: str | None
    state: str
    exp: int
    payload: bytes | None = None
    """For a sealed payload: the raw bytes, judged by ``reference_claims`` instead."""
    iat: int | None = NOW
    """When it was minted: a guard refuses a token minted after the verifier's now (clock_skew 0)."""


@dataclass(frozen=True)
class Case:
    """One call of ``verify`` and ``decode``: the token and the verifier's options."""

    token: object
    modes: rs.Mode | str | tuple[rs.Mode | str, ...]
    subject: str
    tool: str | None
    now: int
    leeway: int
    state_type: Any
    max_token_bytes: int
    guard: bool
    minted: dict[str, Minted]


def mint(
    state: str, ring: rs.KeyRing, mode: rs.Mode, subject: str, tool: str | None, seed: bytes
) -> tuple[str, Minted]:
    """A token minted deterministically at ``NOW`` with ``TTL``: the same one in every process.

    Through the strict core's deterministic entry point, with "random" bytes
    (the nonce, then the token id) drawn from ``seed``, as ``Codec.encode``
    draws them from the CSPRNG.
    """
    [wire] = wire_modes(mode)[1]
    random = hashlib.shake_256(b"fuzz urandom" + seed).digest(wire.nonce_bytes + TOKEN_ID_BYTES)
    nonce, token_id = random[: wire.nonce_bytes], random[wire.nonce_bytes :].hex()
    size = rs.DEFAULT_MAX_TOKEN_BYTES
    token = seal_token(state, wire, ring, subject, tool, NOW + TTL, nonce, token_id, NOW, size)
    return token, Minted(mode, subject, tool, state, NOW + TTL)  # minted at NOW


def _mint_seeds() -> dict[str, Minted]:
    minted: dict[str, Minted] = {}
    for mode in MODES:
        for index, (subject, tool) in enumerate(VALID_IDENTITIES):
            for number, state in enumerate(STATES):
                seed = f"{mode}/{index}/{number}".encode()
                token, how = mint(state, RING, mode, subject, tool, seed)
                minted[token] = how
        # One token per mode under the old key of the ring: rotation keeps it valid.
        token, how = mint("old key", OLD_RING, mode, "alice", "book", f"{mode}/old".encode())
        minted[token] = how
    return minted


SEEDS: Final[dict[str, Minted]] = _mint_seeds()


def _pick(options: tuple[Any, ...], byte: int) -> Any:
    return options[byte % len(options)]


def _edit(token: str, edit: bytes) -> str:
    """One edit of a minted token: none, replace, delete, insert a character, or truncate."""
    op, high, low, char = edit
    if not token:
        return token
    at = ((high << 8) | low) % len(token)
    replacement = chr(char)
    if op % 5 == 1:
        return token[:at] + replacement + token[at + 1 :]
    if op % 5 == 2:
        return token[:at] + token[at + 1 :]
    if op % 5 == 3:
        return token[:at] + replacement + token[at:]
    if op % 5 == 4:
        return token[:at]
    return token


def _object_of(body: bytes) -> object:
    """A token value of some type other than a plain ``str``, chosen by the first byte."""
    choice, rest = (body[0], body[1:]) if body else (0, b"")
    text = rest.decode("utf-8", "surrogateescape")
    objects: tuple[object, ...] = (
        None,
        rest,
        bytearray(rest),
        memoryview(rest),
        int.from_bytes(rest[:16], "big", signed=True),
        len(rest) / 7,
        [text],
        {"token": text},
        (text,),
        _StrSubclass(text),
        True,
        object(),
    )
    return objects[choice % len(objects)]


class _StrSubclass(str):
    """What a careless JSON layer could hand over: a ``str`` that is not exactly ``str``."""

    __slots__ = ()


def case_of(data: bytes) -> Case:
    """Decode one fuzz input into the case it describes (short inputs are zero-padded)."""
    header = data[:HEADER_BYTES].ljust(HEADER_BYTES, b"\0")
    body = data[HEADER_BYTES:]
    mode_byte, identity_byte, flags, now_byte, kind_byte = header
    modes = _pick(MODE_CHOICES, mode_byte)
    subject, tool = _pick(IDENTITIES, identity_byte)
    guard = bool(flags & 0x01)
    state_type = _pick(TYPES, flags >> 1)
    max_token_bytes = SMALL_MAX_TOKEN_BYTES if flags & 0x08 else rs.DEFAULT_MAX_TOKEN_BYTES
    leeway = _pick(LEEWAYS, flags >> 4)
    now = NOW + _pick(NOW_OFFSETS, now_byte)
    minted = SEEDS
    token: object
    kind = kind_byte % 8
    if kind == KIND_OBJECT:
        token = _object_of(body)
    elif kind == KIND_MINT:
        # Mint a token for the state in the input, under a mode and identity of its own, then edit it.
        edit, rest = body[:4].ljust(4, b"\0"), body[4:]
        mint_mode = _pick(MODES, kind_byte >> 3)
        mint_subject, mint_tool = _pick(VALID_IDENTITIES, kind_byte >> 5)
        state = rest.decode("utf-8", "replace")
        token, how = mint(state, RING, mint_mode, mint_subject, mint_tool, rest)
        minted = {**SEEDS, token: how}
        token = _edit(token, edit)
    elif kind == KIND_SEAL:
        # Seal the rest as the payload, under the case's own identity: only the payload rules decide.
        seal_mode = _pick(MODES, kind_byte >> 3)
        valid = (subject, tool) in VALID_IDENTITIES
        tag = reference.bind_tag(SECRET, *((subject, tool) if valid else ("", None)))
        nonce = hashlib.shake_256(body).digest(24 if seal_mode is rs.Mode.XCHACHA else 12)
        if seal_mode is rs.Mode.SIGNED:
            token = reference.signed_token(SECRET, body)
        elif seal_mode is rs.Mode.ENCRYPTED:
            token = reference.encrypted_token(SECRET, body, tag, nonce)
        else:
            token = reference.xchacha_token(SECRET, body, tag, nonce)
        how = Minted(seal_mode, subject if valid else "", tool if valid else None, "", 0, body)
        minted = {**SEEDS, token: how}
    else:
        # Most inputs: the rest is the token text, with undecodable bytes as lone surrogates.
        token = body.decode("utf-8", "surrogateescape")
    return Case(token, modes, subject, tool, now, leeway, state_type, max_token_bytes, guard, minted)


def _allowed(modes: rs.Mode | str | tuple[rs.Mode | str, ...]) -> frozenset[rs.Mode]:
    return frozenset(rs.Mode(mode) for mode in (modes if isinstance(modes, tuple) else (modes,)))


def _options(case: Case, guard: rs.Guard | None) -> dict[str, Any]:
    return {
        "mode": case.modes,
        "subject": case.subject,
        "tool": case.tool,
        "now": case.now,
        "leeway": case.leeway,
        "type": case.state_type,
        "max_token_bytes": case.max_token_bytes,
        "guard": guard,
    }


def _verify(case: Case, guard: rs.Guard | None) -> tuple[bool, Any]:
    """``(True, state)`` or ``(False, reason)``; any other exception is a violation."""
    try:
        return True, rs.verify(case.token, RING, **_options(case, guard))
    except rs.InvalidToken as refusal:
        if not isinstance(refusal.reason, rs.Reason):
            raise PropertyViolation(f"InvalidToken without a Reason: {refusal.reason!r}") from None
        return False, refusal.reason
    except Exception as error:
        raise PropertyViolation(f"verify raised {type(error).__name__}: {error}") from error


def _decode(case: Case, guard: rs.Guard | None) -> Any:
    try:
        return rs.decode(case.token, RING, **_options(case, guard))
    except Exception as error:
        raise PropertyViolation(f"decode raised {type(error).__name__}: {error}") from error


def _same(left: Any, right: Any) -> bool:
    return bool(left == right) or repr(left) == repr(right)


class _Refused(Exception):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    if len({name for name, _ in pairs}) != len(pairs):
        raise _Refused
    return dict(pairs)


def _refuse_constant(name: str) -> Any:
    raise _Refused  # NaN, Infinity, -Infinity: not JSON


def _all_strings_valid(value: Any) -> bool:
    """msgspec refuses a lone surrogate escape anywhere; the standard library reads it."""
    if isinstance(value, str):
        return not any("\ud800" <= char <= "\udfff" for char in value)
    if isinstance(value, dict):
        return all(_all_strings_valid(key) and _all_strings_valid(item) for key, item in value.items())
    if isinstance(value, list):
        return all(map(_all_strings_valid, value))
    return True


class _Float(float):
    pass


def reference_claims(payload: bytes, guarded: bool) -> tuple[str, int, str, int | None] | None:
    """The payload rules of docs/wire-format.md, by the standard library: ``(s, exp, b, iat)`` or ``None``."""
    try:
        document = json.loads(
            payload.decode("utf-8"),
            object_pairs_hook=_no_duplicates,
            parse_constant=_refuse_constant,
            parse_float=_Float,
        )
    except (_Refused, ValueError, RecursionError):
        return None
    if not isinstance(document, dict) or not _all_strings_valid(document):
        return None
    state, exp, tag = document.get("s"), document.get("exp"), document.get("b")
    token_id = document.get("id")
    if not isinstance(state, str) or type(exp) is not int or not isinstance(tag, str):
        return None
    if not INT64_MIN <= exp <= INT64_MAX or len(tag) != 64:
        return None
    if token_id is not None and not (isinstance(token_id, str) and 1 <= len(token_id) <= 64):
        return None
    iat = document.get("iat")
    if guarded and (token_id is None or iat is None):
        return None  # a guard needs an id to claim, and an iat to date it
    return state, exp, tag, iat if type(iat) is int else None


def _memory_guard() -> rs.MemoryGuard:
    # Its memory began before any time a case mints at: it refuses no token for predating it.
    return rs.MemoryGuard(clock=lambda: INT64_MIN, clock_skew=0)


def _expected(case: Case, how: Minted) -> tuple[bool, Any]:
    """Whether a minted token must be accepted under this case, and the state it must give."""
    if how.payload is not None:
        claims = reference_claims(how.payload, case.guard)
        if claims is None or claims[2] != reference.bind_tag(SECRET, how.subject, how.tool):
            return False, None
        how = Minted(how.mode, how.subject, how.tool, claims[0], claims[1], iat=claims[3])
    if (
        len(str(case.token)) > case.max_token_bytes
        or how.mode not in _allowed(case.modes)
        or (how.subject, how.tool) != (case.subject, case.tool)
        or case.now > how.exp + case.leeway
        or (case.guard and how.iat is not None and how.iat > case.now)
    ):
        return False, None
    if case.state_type is None:
        return True, how.state
    try:
        return True, msgspec.json.decode(how.state, type=case.state_type)
    except (msgspec.DecodeError, RecursionError):
        return False, None


def check_case(case: Case) -> None:
    """Run one case through ``verify`` and ``decode``; raise ``PropertyViolation`` if a property fails."""
    guard = _memory_guard() if case.guard else None
    accepted, outcome = _verify(case, guard)
    decoded = _decode(case, _memory_guard() if case.guard else None)
    if not accepted and decoded is not None:
        raise PropertyViolation(f"verify refused ({outcome}) but decode returned a state")

    how = case.minted.get(str(case.token)) if isinstance(case.token, str) else None
    if how is None:
        if accepted:
            raise PropertyViolation("accepted a token the harness never minted")
        if not isinstance(case.token, str) and outcome is not rs.Reason.MALFORMED:
            raise PropertyViolation(f"a {type(case.token).__name__} token was refused as {outcome}")
        return

    must_accept, state = _expected(case, how)
    if accepted != must_accept:
        raise PropertyViolation(f"a minted token was {'accepted' if accepted else f'refused ({outcome})'}")
    if not accepted:
        return
    if not _same(outcome, state) or not _same(decoded, state):
        raise PropertyViolation("accepted, but with a state other than the one minted")
    if guard is not None:
        replayed, reason = _verify(case, guard)
        if replayed or reason is not rs.Reason.REPLAYED:
            raise PropertyViolation(f"a guarded token was redeemed twice (second: {reason})")


def check_input(data: bytes) -> None:
    """The fuzz target: decode ``data`` into a case and check it."""
    check_case(case_of(data))


def _header(modes: int, identity: int, flags: int, now: int, kind: int) -> bytes:
    return bytes((modes, identity, flags, now, kind))


def seed_inputs() -> list[bytes]:
    """Starting inputs: every seed token under the configuration it verifies in, and a few others."""
    inputs: list[bytes] = []
    for token, how in SEEDS.items():
        mode_byte = MODE_CHOICES.index(how.mode)
        identity_byte = IDENTITIES.index((how.subject, how.tool))
        body = token.encode("ascii")
        inputs.append(_header(mode_byte, identity_byte, 0, 0, KIND_TEXT) + body)
        inputs.append(_header(mode_byte, identity_byte, 0x01, 0, KIND_TEXT) + body)  # with a guard
    # The same token under other configurations: all modes, another identity, late, small, typed.
    token = next(iter(SEEDS))
    inputs += [
        _header(6, 0, 0x02, 4, KIND_TEXT) + token.encode(),
        _header(6, 2, 0x04, 1, KIND_TEXT) + token.encode(),
        _header(6, 0, 0x08, 0, KIND_TEXT) + token.encode(),
        _header(0, 0, 0, 0, KIND_OBJECT) + b"\x01" + token.encode(),
        _header(6, 0, 0, 0, KIND_OBJECT) + b"\x09" + token.encode(),
        _header(6, 2, 0x03, 0, KIND_MINT) + b"\x00\x00\x00\x00" + b'{"step":1,"date":"x"}',
        _header(6, 2, 0x01, 0, KIND_MINT | 0x08) + b"\x01\x00\x10\x41" + b"state",
    ]
    # Payloads sealed with the real key: well formed in each mode, then each breaking one rule.
    tag = reference.bind_tag(SECRET, "alice", "book")
    good = reference.payload("state", NOW + TTL, tag, "0" * 32)
    for mode_index in range(len(MODES)):
        inputs.append(_header(6, 2, 0x01, 0, KIND_SEAL | mode_index << 3) + good)
    inputs += [
        _header(6, 2, 0, 0, KIND_SEAL) + good.replace(b'"s":', b'"s":"x","s":'),
        _header(6, 2, 0, 0, KIND_SEAL) + good.replace(f"{NOW + TTL}".encode(), f"{NOW + TTL}.0".encode()),
        _header(6, 2, 0, 0, KIND_SEAL) + good.replace(b'"state"', b'"\\ud800"'),
        _header(6, 2, 0, 0, KIND_SEAL) + good.replace(b"}", b',"extra":[1,{"a":null}]}'),
        _header(6, 2, 0x01, 0, KIND_SEAL) + reference.payload("no id", NOW, tag),
    ]
    # The seeds exercise what they are meant to: a token of every mode accepted, a guard, a non-str.
    cases = [case_of(data) for data in inputs]
    accepted = {
        case.minted[case.token].mode
        for case in cases
        if isinstance(case.token, str) and case.token in case.minted
    }
    assert accepted == set(MODES), accepted
    assert any(case.guard for case in cases)
    assert any(not isinstance(case.token, str) for case in cases)
    return inputs
