"""Write valid.json and invalid.json beside this file from tests/support/reference.py.

Run from the repository root: ``python -m tests.vectors.generate``. The files
are committed, and tests/test_vectors.py checks the package against them;
``python -m tests.vectors.generate --check`` checks that the reference still
writes them, without writing anything.
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import Any

from tests.support import reference as ref

HERE = Path(__file__).parent
SPEC_SECRET = bytes(range(32))
LONG_SECRET = bytes(range(64, 128))
OTHER_SECRET = bytes(range(32, 64))
NONCE = bytes(range(0xA0, 0xAC))
XNONCE = bytes(range(0xC0, 0xD8))
EXP = 2_000_000_000
TOKEN_ID = bytes(range(0xE0, 0xF0)).hex()
# When requeststate's tokens were minted (their iat): EXP less the default ttl.
MINTED = EXP - 300

ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def valid_vectors() -> list[dict[str, Any]]:
    shapes: list[tuple[str, str, str | None]] = [
        ("no binding", "", None),
        ("subject only", "alice", None),
        ("subject and tool", "alice", "tool"),
        ("tool only", "", "tool"),
        ("unicode identity", "ålice@例え.jp", "réserver 🗓"),
    ]
    states = [
        ("spec state", '{"step":1}'),
        ("empty state", ""),
        ("unicode state", 'é 日本 🎉 "quoted" back\\slash\nline\ttab \u2028 \x7f \x01'),
    ]
    nonces = {"signed": b"", "encrypted": NONCE, "xchacha": XNONCE}
    vectors: list[dict[str, Any]] = []
    for mode, nonce in nonces.items():
        for secret_name, secret in (("spec key", SPEC_SECRET), ("64-byte key", LONG_SECRET)):
            for shape_name, subject, tool in shapes:
                for state_name, state in states:
                    # Tokens as requeststate writes them (with an id), and, for the
                    # shared-spec modes, as mcp.d writes them (without).
                    ids = [TOKEN_ID] if mode == "xchacha" or secret is LONG_SECRET else [TOKEN_ID, None]
                    for token_id in ids:
                        writer = "requeststate" if token_id else "mcp.d"
                        vectors.append(
                            {
                                "name": f"{mode}, {writer}, {secret_name}, {shape_name}, {state_name}",
                                "mode": mode,
                                "secret": secret.hex(),
                                "subject": subject,
                                "tool": tool,
                                "state": state,
                                "exp": EXP,
                                "nonce": nonce.hex(),
                                "id": token_id,
                                "iat": MINTED if token_id else None,
                                "token": ref.token(
                                    mode,
                                    secret,
                                    state,
                                    EXP,
                                    subject,
                                    tool,
                                    nonce,
                                    token_id,
                                    MINTED if token_id else None,
                                ),
                            }
                        )
    return vectors


def _signed_over(raw_payload: bytes) -> str:
    return ref.signed_token(SPEC_SECRET, raw_payload)


def _encrypted_over(raw_payload: bytes, subject: str = "alice", tool: str | None = "tool") -> str:
    tag = ref.bind_tag(SPEC_SECRET, subject, tool)
    return ref.encrypted_token(SPEC_SECRET, raw_payload, tag, NONCE)


def _xchacha_over(raw_payload: bytes, secret: bytes = SPEC_SECRET) -> str:
    tag = ref.bind_tag(secret, "alice", "tool")
    return ref.xchacha_token(secret, raw_payload, tag, XNONCE)


def _set_last_char_low_bits(part: str) -> str:
    value = ALPHABET.index(part[-1])
    return part[:-1] + ALPHABET[(value & ~0x03) | 0x01]


def invalid_vectors() -> list[dict[str, Any]]:
    tag = ref.bind_tag(SPEC_SECRET, "alice", "tool")
    good = ref.payload('{"step":1}', EXP, tag)
    signed = _signed_over(good)
    prefix, body, mac = signed.split(".")
    encrypted = _encrypted_over(good)
    cases: list[tuple[str, str, str, str]] = []  # (name, rule, token, reason)

    def add(name: str, rule: str, token: str, reason: str) -> None:
        cases.append((name, rule, token, reason))

    base64_rule = "Base64: readers accept only the canonical form"
    add("padded MAC", base64_rule, f"{signed}=", "malformed")
    add("padded payload", base64_rule, f"{prefix}.{body}==.{mac}", "malformed")
    add("plus in MAC", base64_rule, f"{prefix}.{body}.+{mac[1:]}", "malformed")
    add("slash in payload", base64_rule, f"{prefix}./{body[1:]}.{mac}", "malformed")
    add("trailing newline", base64_rule, f"{signed}\n", "malformed")
    add("space inside", base64_rule, f"{prefix}.{body[:8]} {body[8:]}.{mac}", "malformed")
    add(
        "non-zero trailing bits in MAC",
        base64_rule,
        f"{prefix}.{body}.{_set_last_char_low_bits(mac)}",
        "malformed",
    )
    add("length 1 mod 4", base64_rule, f"{prefix}.{body}.{mac}AA", "malformed")
    add("encrypted blob padded", base64_rule, f"{encrypted}=", "malformed")
    add("non-ASCII character", base64_rule, f"{prefix}.{body}.{mac[:-1]}é", "malformed")

    signed_rule = "Signed mode: exactly three parts, MAC exactly 32 bytes"
    add("two parts", signed_rule, f"{prefix}.{body}", "malformed")
    add("four parts", signed_rule, f"{signed}.{mac}", "malformed")
    add("empty MAC", signed_rule, f"{prefix}.{body}.", "malformed")
    add("MAC of 31 bytes", signed_rule, f"{prefix}.{body}.{ref.b64(bytes(31))}", "malformed")
    add("MAC of 33 bytes", signed_rule, f"{prefix}.{body}.{ref.b64(bytes(33))}", "malformed")

    encrypted_rule = "Encrypted mode: decoded blob at least 12 + 16 bytes"
    add("blob of 27 bytes", encrypted_rule, "v1e." + ref.b64(bytes(27)), "malformed")
    add("v1x. blob of 39 bytes (24 + 16 - 1)", encrypted_rule, "v1x." + ref.b64(bytes(39)), "malformed")
    add("v1x. blob of 40 bytes, no valid tag", encrypted_rule, "v1x." + ref.b64(bytes(40)), "bad_signature")
    add("empty blob", encrypted_rule, "v1e.", "malformed")
    add("dot in blob", encrypted_rule, f"{encrypted[:20]}.{encrypted[20:]}", "malformed")

    prefix_rule = "Failure: unknown prefix"
    add("unknown version", prefix_rule, "v2." + signed[3:], "malformed")
    add("upper-case prefix", prefix_rule, "V1." + signed[3:], "malformed")
    add("no prefix", prefix_rule, signed[3:], "malformed")
    add("empty token", prefix_rule, "", "malformed")
    add("signed token with v1e. prefix", prefix_rule, "v1e." + signed[3:], "malformed")
    add("encrypted token with v1. prefix", prefix_rule, "v1." + encrypted[4:], "malformed")
    add("encrypted token with v1x. prefix", prefix_rule, "v1x." + encrypted[4:], "bad_signature")
    add("xchacha token with v1e. prefix", prefix_rule, "v1e." + _xchacha_over(good)[4:], "bad_signature")

    exp_text = str(EXP)
    payload_rule = "Payload: readers reject"
    bad_payloads = [
        ("payload not JSON", b"not json"),
        ("payload a JSON array", b'["{\\"step\\":1}",2000000000,"' + tag.encode() + b'"]'),
        ("payload a JSON string", b'"x"'),
        ("payload not UTF-8", b'{"s":"\xff","exp":' + exp_text.encode() + b',"b":"' + tag.encode() + b'"}'),
        ("payload with trailing garbage", good + b"x"),
        ("missing s", f'{{"exp":{exp_text},"b":"{tag}"}}'.encode()),
        ("missing exp", f'{{"s":"x","b":"{tag}"}}'.encode()),
        ("missing b", f'{{"s":"x","exp":{exp_text}}}'.encode()),
        ("duplicate s", f'{{"s":"x","s":"y","exp":{exp_text},"b":"{tag}"}}'.encode()),
        ("duplicate exp", f'{{"s":"x","exp":1,"exp":{exp_text},"b":"{tag}"}}'.encode()),
        ("duplicate b", f'{{"s":"x","exp":{exp_text},"b":"{"0" * 64}","b":"{tag}"}}'.encode()),
        (
            "duplicate s spelled with an escape",
            f'{{"s":"x","\\u0073":"y","exp":{exp_text},"b":"{tag}"}}'.encode(),
        ),
        ("duplicate extra member", f'{{"s":"x","exp":{exp_text},"b":"{tag}","z":1,"z":2}}'.encode()),
        ("exp true", f'{{"s":"x","exp":true,"b":"{tag}"}}'.encode()),
        ("exp float", f'{{"s":"x","exp":{exp_text}.0,"b":"{tag}"}}'.encode()),
        ("exp exponent", f'{{"s":"x","exp":2e9,"b":"{tag}"}}'.encode()),
        ("exp string", f'{{"s":"x","exp":"{exp_text}","b":"{tag}"}}'.encode()),
        ("exp over int64", f'{{"s":"x","exp":9223372036854775808,"b":"{tag}"}}'.encode()),
        ("exp under int64", f'{{"s":"x","exp":-9223372036854775809,"b":"{tag}"}}'.encode()),
        ("s a number", f'{{"s":1,"exp":{exp_text},"b":"{tag}"}}'.encode()),
        ("s null", f'{{"s":null,"exp":{exp_text},"b":"{tag}"}}'.encode()),
        ("s an object", f'{{"s":{{"step":1}},"exp":{exp_text},"b":"{tag}"}}'.encode()),
        ("b 63 characters", f'{{"s":"x","exp":{exp_text},"b":"{tag[:63]}"}}'.encode()),
        ("b a number", f'{{"s":"x","exp":{exp_text},"b":1}}'.encode()),
        ("lone surrogate escape in s", f'{{"s":"\\ud800","exp":{exp_text},"b":"{tag}"}}'.encode()),
        ("id empty", f'{{"s":"x","exp":{exp_text},"b":"{tag}","id":""}}'.encode()),
        ("id a number", f'{{"s":"x","exp":{exp_text},"b":"{tag}","id":7}}'.encode()),
        ("id of 65 characters", f'{{"s":"x","exp":{exp_text},"b":"{tag}","id":"{"A" * 65}"}}'.encode()),
        ("iat a string", f'{{"s":"x","exp":{exp_text},"b":"{tag}","id":"x","iat":"1"}}'.encode()),
        ("iat 1.0", f'{{"s":"x","exp":{exp_text},"b":"{tag}","id":"x","iat":1.0}}'.encode()),
        (
            "iat past 2**63-1",
            f'{{"s":"x","exp":{exp_text},"b":"{tag}","id":"x","iat":9223372036854775808}}'.encode(),
        ),
    ]
    for name, raw in bad_payloads:
        add(f"signed, {name}", payload_rule, _signed_over(raw), "malformed")
    also_encrypted = {"payload not JSON", "duplicate s", "exp float", "s null"}
    for name, raw in bad_payloads:
        if name in also_encrypted:
            add(f"encrypted, {name}", payload_rule, _encrypted_over(raw), "malformed")
            add(f"xchacha, {name}", payload_rule, _xchacha_over(raw), "malformed")

    # 64 characters that are not the bind tag, whatever their alphabet: authentic, bound to no one.
    b_rule = "Payload: readers reject b that is not 64 lowercase hex: it is no bind tag (wrong_binding)"
    for name, b in (("b upper-case hex", tag.upper()), ("b not hex", "g" * 64), ("b non-ASCII", "é" * 64)):
        raw = ref.payload("x", EXP, b)
        add(f"signed, {name}", b_rule, _signed_over(raw), "wrong_binding")
        add(f"encrypted, {name}", b_rule, _encrypted_over(raw), "wrong_binding")
        add(f"xchacha, {name}", b_rule, _xchacha_over(raw), "wrong_binding")

    key_rule = "Failure: bad MAC or GCM tag"
    add("signed under a key not in the ring", key_rule, ref.signed_token(OTHER_SECRET, good), "bad_signature")
    other_tag = ref.bind_tag(OTHER_SECRET, "alice", "tool")
    add(
        "encrypted under a key not in the ring",
        key_rule,
        ref.encrypted_token(OTHER_SECRET, ref.payload('{"step":1}', EXP, other_tag), other_tag, NONCE),
        "bad_signature",
    )
    add("xchacha under a key not in the ring", key_rule, _xchacha_over(good, OTHER_SECRET), "bad_signature")
    add(
        "signed, MAC of another payload",
        key_rule,
        f"{prefix}.{body}.{_signed_over(b'{}').split('.')[2]}",
        "bad_signature",
    )
    raw = base64.urlsafe_b64decode(encrypted[4:] + "==")
    for name, index in (("nonce", 0), ("ciphertext", 20), ("GCM tag", len(raw) - 1)):
        flipped = bytearray(raw)
        flipped[index] ^= 0x01
        add(
            f"encrypted, one bit of the {name} flipped",
            key_rule,
            "v1e." + ref.b64(bytes(flipped)),
            "bad_signature",
        )
    add("encrypted, GCM tag stripped", key_rule, "v1e." + ref.b64(bytes(raw[:-16])), "bad_signature")

    binding_rule = "Bind tag: a token verifies only for the identity it was minted for"
    bob_tag = ref.bind_tag(SPEC_SECRET, "bob", "tool")
    add("signed, minted for bob", binding_rule, _signed_over(ref.payload("x", EXP, bob_tag)), "wrong_binding")
    add(
        "encrypted, minted for bob",
        binding_rule,
        _encrypted_over(ref.payload("x", EXP, bob_tag), "bob"),
        "bad_signature",
    )
    add(
        "encrypted, AAD of alice but b of bob",
        binding_rule,
        _encrypted_over(ref.payload("x", EXP, bob_tag)),
        "wrong_binding",
    )

    expiry_rule = "Expiry: rejected when now > exp + leeway"
    add("signed, expired a second ago", expiry_rule, _signed_over(ref.payload("x", EXP - 1, tag)), "expired")
    add(
        "encrypted, expired a second ago",
        expiry_rule,
        _encrypted_over(ref.payload("x", EXP - 1, tag)),
        "expired",
    )
    add(
        "xchacha, expired a second ago", expiry_rule, _xchacha_over(ref.payload("x", EXP - 1, tag)), "expired"
    )

    # Each vector names the rule of docs/wire-format.md it breaks, by the section that states it.
    sections = {"Base64", "Signed mode", "Encrypted mode", "Failure", "Payload", "Bind tag", "Expiry"}
    unnamed = [name for name, rule, _, _ in cases if rule.split(":")[0] not in sections]
    assert unnamed == [], f"vectors naming no rule of the spec: {unnamed}"
    return [
        {
            "name": name,
            "rule": rule,
            "token": token,
            "mode": ["signed", "encrypted", "xchacha"],
            "secret": SPEC_SECRET.hex(),
            "subject": "alice",
            "tool": "tool",
            "now": EXP,
            "reason": reason,
        }
        for name, rule, token, reason in cases
    ]


def main(argv: list[str]) -> int:
    check = argv == ["--check"]
    stale = []
    for name, vectors in (("valid.json", valid_vectors()), ("invalid.json", invalid_vectors())):
        text = json.dumps(vectors, indent=1, ensure_ascii=False) + "\n"
        if not check:
            (HERE / name).write_text(text, encoding="utf-8")
            print(f"wrote {len(vectors)} vectors to {name}")
        elif (HERE / name).read_text(encoding="utf-8") != text:
            stale.append(name)
    if stale:
        print(f"the reference no longer writes {', '.join(stale)}", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
