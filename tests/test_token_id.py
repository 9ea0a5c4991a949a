"""Token ids: UUIDv7s that tell when their token was minted (``_token_id``, ``rs.minted_at``)."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

import requeststate as rs
from requeststate._token_id import TOKEN_ID_RANDOM_BYTES, new_token_id

RANDOM = bytes(range(0xE0, 0xE0 + TOKEN_ID_RANDOM_BYTES))
# The latest second UUIDv7's 48-bit millisecond field holds (in the year 10889).
LATEST = (2**48 - 1) // 1000


def test_an_id_is_the_uuid7_of_its_mint_time_and_random_bits() -> None:
    # The known answer of tests/vectors: 1999999700 s is 0x01d1a9458c20 ms.
    assert new_token_id(1_999_999_700, RANDOM) == "01d1a945-8c20-70e1-a2e3-e4e5e6e7e8e9"


@given(
    minted=st.integers(1, LATEST),
    random=st.binary(min_size=TOKEN_ID_RANDOM_BYTES, max_size=TOKEN_ID_RANDOM_BYTES),
)
def test_an_id_tells_the_second_its_token_was_minted(minted: int, random: bytes) -> None:
    token_id = new_token_id(minted, random)
    parsed = uuid.UUID(token_id)
    assert (rs.minted_at(token_id), parsed.version, parsed.variant, str(parsed)) == (
        minted,
        7,
        uuid.RFC_4122,
        token_id,
    )


@pytest.mark.parametrize("minted", [-1, 0, LATEST + 1, 2**63 - 1])
def test_a_time_uuid7_cannot_hold_makes_an_id_that_tells_no_time(minted: int) -> None:
    # A guard then dates the token as cautiously as an id of another layout.
    token_id = new_token_id(minted, RANDOM)
    assert (uuid.UUID(token_id).version, rs.minted_at(token_id)) == (7, None)


@pytest.mark.parametrize(
    "token_id",
    [
        "5f0c6a3e9d2b4c1a8e7f6d5c4b3a2918",  # requeststate 0.3: 32 random hex digits
        "01D1A945-8C20-70E1-A2E3-E4E5E6E7E8E9",  # upper case: not how a writer of ours spells it
        "01d1a945-8c20-40e1-a2e3-e4e5e6e7e8e9",  # version 4
        "01d1a945-8c20-70e1-c2e3-e4e5e6e7e8e9",  # another variant
        "01d1a9458c2070e1a2e3e4e5e6e7e8e9",  # no dashes
        "01d1a945-8c20-70e1-a2e3-e4e5e6e7e8e9\n",
        "",
    ],
)
def test_an_id_of_another_layout_tells_no_time(token_id: str) -> None:
    assert rs.minted_at(token_id) is None
