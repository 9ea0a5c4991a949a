"""What a replay guard claims: a token's id and when it was minted (``_token_id``, ``rs.ClaimId``)."""

from __future__ import annotations

import hashlib

import pytest

import requeststate as rs
from requeststate._seam import claimed_member
from requeststate._token_id import claim_id

TOKEN_ID = bytes(range(0xE0, 0xF0)).hex()


def test_a_token_with_an_iat_is_claimed_as_its_id_and_its_mint_time() -> None:
    assert claim_id(TOKEN_ID, 1_999_999_700) == rs.ClaimId(TOKEN_ID, 1_999_999_700)


@pytest.mark.parametrize(("token_id", "minted"), [(TOKEN_ID, None), (None, 1_999_999_700), (None, None)])
def test_a_token_without_an_id_or_an_iat_has_nothing_to_claim(
    token_id: str | None, minted: int | None
) -> None:
    # No id (mcp.d's tokens) or no iat (requeststate 0.3's): no guard can date it, so none claims it.
    assert claim_id(token_id, minted) is None


def test_a_store_holds_the_digest_of_the_id_that_requeststate_0_4_claimed() -> None:
    # A rolling upgrade runs 0.4 workers beside new ones on one store: a member of another layout
    # would let each accept the same token once.
    claimed = rs.ClaimId(TOKEN_ID, 1_999_999_700)
    assert claimed_member(claimed) == hashlib.sha256(f"1999999700-{TOKEN_ID}".encode()).hexdigest()
