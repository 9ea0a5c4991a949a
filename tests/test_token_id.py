"""What a replay guard claims: a token's id and when it was minted (``_token_id``, ``rs.minted_at``)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import requeststate as rs
from requeststate._token_id import claim_id

TOKEN_ID = bytes(range(0xE0, 0xF0)).hex()


def test_a_token_with_an_iat_is_claimed_as_its_mint_time_and_its_id() -> None:
    assert claim_id(TOKEN_ID, 1_999_999_700) == f"1999999700-{TOKEN_ID}"


@pytest.mark.parametrize(("token_id", "minted"), [(TOKEN_ID, None), (None, 1_999_999_700), (None, None)])
def test_a_token_without_an_id_or_an_iat_has_nothing_to_claim(
    token_id: str | None, minted: int | None
) -> None:
    # No id (mcp.d's tokens) or no iat (requeststate 0.3's): no guard can date it, so none claims it.
    assert claim_id(token_id, minted) is None


@given(minted=st.integers(-(2**63), 2**63 - 1), random=st.binary(min_size=16, max_size=16))
def test_what_a_token_of_ours_is_claimed_as_tells_when_it_was_minted(minted: int, random: bytes) -> None:
    dated = claim_id(random.hex(), minted)
    assert dated is not None
    assert rs.minted_at(dated) == minted


@pytest.mark.parametrize(
    "claimed",
    [
        TOKEN_ID,  # a token without iat: requeststate 0.3's, 128 random bits in hex
        f"1999999700-{TOKEN_ID.upper()}",  # upper case: no writer of ours
        f"1999999700-{TOKEN_ID[:-1]}",  # an id of 31 hex digits
        f"1999999700-{TOKEN_ID}\n",
        f"19999997000000000000-{TOKEN_ID}",  # 20 digits: past 2**63
        "1999999700-another writer's id",
        "",
    ],
)
def test_a_claim_of_another_shape_tells_no_time(claimed: str) -> None:
    assert rs.minted_at(claimed) is None
