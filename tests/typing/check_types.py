"""Static checks of the public API's types, run by mypy and pyright (never executed).

Each ``assert_type`` states what a caller's type checker must infer; a
``type: ignore`` line states a call it must refuse (mypy's
``warn_unused_ignores`` fails the run if the call is accepted).
"""

from __future__ import annotations

from typing import assert_type

import msgspec

import requeststate as rs


class Booking(msgspec.Struct):
    step: int


async def check_public_api(keys: rs.KeyRing, token: str, guard: rs.AsyncGuard) -> None:
    codec = rs.Codec(keys, mode="encrypted")
    assert_type(codec.encode({"step": 1}, subject="alice", tool="book"), str)
    assert_type(codec.decode(token, subject="alice"), str | None)
    assert_type(codec.decode(token, type=Booking), Booking | None)
    assert_type(codec.verify(token), str)
    assert_type(codec.verify(token, type=Booking), Booking)
    assert_type(await codec.adecode(token, type=Booking), Booking | None)
    assert_type(await codec.averify(token), str)
    assert_type(codec.modes, tuple[rs.Mode, ...])
    assert_type(codec.keys, rs.KeyRing)

    assert_type(rs.encode("s", keys, mode="signed"), str)
    assert_type(rs.decode(token, keys, mode=("signed", rs.Mode.ENCRYPTED)), str | None)
    assert_type(rs.decode(token, keys, mode="xchacha", type=Booking), Booking | None)
    assert_type(rs.verify(token, keys, mode="signed", type=list[int]), list[int])
    assert_type(await rs.Codec(keys, mode="encrypted", guard=guard).adecode(token), str | None)
    assert_type(rs.Codec.from_env(mode="signed"), rs.Codec)

    rs.Codec(keys, mode="encrypt")  # type: ignore[arg-type]  # a typo in the mode
    rs.decode(token, keys, mode="aes")  # type: ignore[arg-type]
    codec.decode(token, subjct="alice")  # type: ignore[call-arg]  # a typo in an argument
    rs.decode(token, keys, mode="signed", tll=300)  # type: ignore[call-arg]  # a typo in an option
    rs.Codec(keys, mode="signed", ttl="300")  # type: ignore[arg-type]
