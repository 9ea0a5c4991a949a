"""Static checks of the public API's types, run by mypy and pyright (never executed).

Each ``assert_type`` states what a caller's type checker must infer; a
``type: ignore`` line states a call it must refuse (mypy's
``warn_unused_ignores`` and pyright's ``reportUnnecessaryTypeIgnoreComment``
fail the run if the call is accepted).

``type=`` is typed by a TypeVar whose default is ``str`` (PEP 696): without
it the state is its JSON text, with it the type named.
"""

from __future__ import annotations

from typing import assert_type

import msgspec

import requeststate as rs


class Booking(msgspec.Struct):
    step: int


async def check_codec(keys: rs.KeyRing, token: str, guard: rs.AsyncGuard) -> None:
    codec = rs.Codec(keys, mode="encrypted")
    assert_type(codec.encode({"step": 1}, subject="alice", tool="book"), str)
    assert_type(codec.decode(token, subject="alice"), str | None)
    assert_type(codec.decode(token, type=Booking), Booking | None)
    assert_type(codec.decode(token, type=dict[str, int]), dict[str, int] | None)
    assert_type(codec.verify(token), str)
    assert_type(codec.verify(token, type=Booking), Booking)
    assert_type(await codec.adecode(token), str | None)
    assert_type(await codec.adecode(token, type=Booking), Booking | None)
    assert_type(await codec.averify(token), str)
    assert_type(await codec.averify(token, type=list[int]), list[int])
    assert_type(codec.modes, tuple[rs.Mode, ...])
    assert_type(codec.keys, rs.KeyRing)
    assert_type(codec.guard, rs.Guard | rs.AsyncGuard | None)
    assert_type(rs.Codec(keys, mode=("signed", rs.Mode.ENCRYPTED), ttl=60, guard=guard), rs.Codec)
    assert_type(rs.Codec.from_env(mode="xchacha", ttl=60), rs.Codec)
    assert_type(rs.Codec.from_env(asyncio=True), rs.Codec)


def check_guard_from_url(url: str, asyncio: bool) -> None:
    # A sync codec's guard is a Guard; an asyncio one's may be either (memory serves both).
    assert_type(rs.guard_from_url(url), rs.Guard)
    assert_type(rs.guard_from_url(url, asyncio=False), rs.Guard)
    assert_type(rs.guard_from_url(url, asyncio=True), rs.Guard | rs.AsyncGuard)
    assert_type(rs.guard_from_url(url, asyncio=asyncio), rs.Guard | rs.AsyncGuard)


def check_functions(keys: rs.KeyRing, token: str) -> None:
    assert_type(rs.encode("s", keys, mode="signed"), str)
    assert_type(rs.encode({"step": 1}, b"secret bytes", mode=rs.Mode.XCHACHA, ttl=60), str)
    assert_type(rs.decode(token, keys, mode=("signed", rs.Mode.ENCRYPTED)), str | None)
    assert_type(rs.decode(token, keys, mode="xchacha", type=Booking), Booking | None)
    assert_type(rs.verify(token, keys, mode="signed"), str)
    assert_type(rs.verify(token, keys, mode="signed", type=list[int]), list[int])


def check_options(options: rs.CodecOptions, codec: rs.Codec, token: str) -> None:
    assert_type(rs.Codec(rs.KeyRing.ephemeral(), **options), rs.Codec)
    assert_type(codec.replace(mode="signed", ttl=60), rs.Codec)
    assert_type(codec.options, rs.CodecOptions)
    assert_type(codec.open(token, subject="alice"), rs.Claims[str])
    assert_type(codec.open(token, type=Booking), rs.Claims[Booking])
    assert_type(rs.peek(token), rs.Peek)


def check_refused(keys: rs.KeyRing, token: str) -> None:
    codec = rs.Codec(keys, mode="signed")
    rs.Codec(keys, mode="encrypt")  # type: ignore[arg-type]  # a typo in the mode
    rs.decode(token, keys, mode="aes")  # type: ignore[arg-type]
    codec.replace(tll=60)  # type: ignore[call-arg]  # a typo in an option
    codec.decode(token, subjct="alice")  # type: ignore[call-arg]  # a typo in a keyword
    rs.Codec(keys, mode="signed", tll=60)  # type: ignore[call-arg]  # a typo in an option
    rs.encode("s", keys, mode="signed", tll=60)  # type: ignore[call-arg]
    rs.Codec(keys, mode="signed", ttl="300")  # type: ignore[arg-type]
    rs.verify(token, keys, mode="signed", leeway=1.5)  # type: ignore[arg-type]
    codec.verify(token=token)  # type: ignore[call-arg]  # the token is positional-only
    rs.KeyRing("a str secret")  # type: ignore[arg-type]
