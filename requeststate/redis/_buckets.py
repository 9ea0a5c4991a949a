"""Where a Redis guard keeps a claim: the bucket (a sorted set) that holds the digest of its id, and the
key beside it that holds an exactly-once claim's record."""

from __future__ import annotations

from typing import Final, NamedTuple

from requeststate import ClaimId
from requeststate._seam import claimed_member

__all__ = ["CLUSTER_BUCKETS", "ClaimLocation", "bucket_key", "bucket_of", "claim_location", "record_key"]

CLUSTER_BUCKETS: Final = 1024
"""How many sorted sets a cluster guard spreads its claims over (one, on a single Redis)."""


class ClaimLocation(NamedTuple):
    """The sorted set that holds a token's claim, and the member that stands for the claim in it."""

    key: str
    member: str


def claim_location(namespace: str, claimed: ClaimId, buckets: int = 1) -> ClaimLocation:
    """Where the claim of ``claimed`` lives: its SHA-256 in hex, in one of ``buckets`` sorted sets.

    The id itself never reaches Redis, and every member has the same length. One
    Redis keeps every claim in ``namespace:claims``; a cluster guard spreads them
    over ``namespace:claims:0`` to ``namespace:claims:1023``, by the digest, so that
    the buckets, each in the slot its name hashes to, spread over every master.
    """
    member = claimed_member(claimed)
    return ClaimLocation(bucket_key(namespace, bucket_of(member, buckets), buckets), member)


def bucket_of(member: str, buckets: int) -> int:
    """Which of ``buckets`` sets holds the claim whose member (a SHA-256 in hex) is ``member``."""
    return int(member[:8], 16) % buckets


def bucket_key(namespace: str, bucket: int, buckets: int) -> str:
    """The name of the ``bucket``-th of ``buckets`` sorted sets of claims."""
    return f"{namespace}:claims" if buckets == 1 else f"{namespace}:claims:{bucket}"


def record_key(namespace: str, bucket: str, member: str) -> str:
    """The key of the record of an exactly-once claim: its member, under the name of its set as a hash tag.

    ``namespace:record:{namespace:claims:7}:<member>``: under the namespace, as every key of the
    guard is (an ACL's ``~namespace:*`` covers it), and in the slot of the set, whose own name,
    with no braces, hashes whole: one script reaches both.
    """
    return f"{namespace}:record:{{{bucket}}}:{member}"
