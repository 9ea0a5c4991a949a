"""Known answers: the spec's own vector, then vectors/valid.json and vectors/invalid.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import requeststate as rs
from requeststate._envelope import seal_token
from requeststate._keys import known_answer_ring
from requeststate._modes import wire_modes
from requeststate._payload import build_payload
from requeststate._signed import SIGNED

VECTORS = Path(__file__).parent / "vectors"
VALID: list[dict[str, Any]] = json.loads((VECTORS / "valid.json").read_text(encoding="utf-8"))
INVALID: list[dict[str, Any]] = json.loads((VECTORS / "invalid.json").read_text(encoding="utf-8"))

SPEC_VECTOR = (
    "v1.eyJzIjoie1wic3RlcFwiOjF9IiwiZXhwIjoyMDAwMDAwMDAwLCJiIjoiMDIxMDgzZTA4YzU0ZDlkYzQ1NWMxZTYzOTg3YTVhYjMw"
    "OTBkMDQzYjRlMzg4MDQ0YzEzYTUyYmFkNDk2ZDc1YyJ9.RsV7ymUnPAhlHTSgL7WwT-JkFDls-50Uj7VMfwSzzQA"
)


def test_spec_vector_is_what_the_signed_mode_writes_without_an_id() -> None:
    [minting] = known_answer_ring(bytes(range(32))).bound("alice", "tool")
    payload = build_payload('{"step":1}', 2_000_000_000, minting.bind_tag)
    assert SIGNED.seal(payload, minting, b"") == SPEC_VECTOR


OURS = [v for v in VALID if v["id"] is not None]


@pytest.mark.parametrize("vector", OURS, ids=[v["name"] for v in OURS])
def test_package_writes_the_valid_vector(vector: dict[str, Any]) -> None:
    # The deterministic entry point: the vector's nonce and token id.
    token = seal_token(
        vector["state"],
        wire_modes(vector["mode"])[1][0],
        known_answer_ring(bytes.fromhex(vector["secret"])),
        vector["subject"],
        vector["tool"],
        vector["exp"],
        bytes.fromhex(vector["nonce"]),
        vector["id"],
        vector["iat"],
        rs.DEFAULT_MAX_TOKEN_BYTES,
    )
    assert token == vector["token"]


@pytest.mark.parametrize("vector", VALID, ids=[v["name"] for v in VALID])
def test_package_reads_the_valid_vector(vector: dict[str, Any]) -> None:
    state = rs.verify(
        vector["token"],
        known_answer_ring(bytes.fromhex(vector["secret"])),
        mode=vector["mode"],
        subject=vector["subject"],
        tool=vector["tool"],
        now=vector["exp"],
    )
    assert state == vector["state"]


@pytest.mark.parametrize("vector", INVALID, ids=[v["name"] for v in INVALID])
def test_invalid_vector_is_refused_for_its_reason(vector: dict[str, Any]) -> None:
    with pytest.raises(rs.InvalidToken, match=f"^{vector['reason']}$") as caught:
        rs.verify(
            vector["token"],
            known_answer_ring(bytes.fromhex(vector["secret"])),
            mode=tuple(vector["mode"]),
            subject=vector["subject"],
            tool=vector["tool"],
            now=vector["now"],
        )
    assert caught.value.reason == rs.Reason(vector["reason"]), vector["rule"]
