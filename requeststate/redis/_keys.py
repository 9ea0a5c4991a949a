"""The keys a Redis guard writes: one per claimed token id, and the markers that show Redis forgot."""

from __future__ import annotations

import functools
import hashlib
import itertools
import string
from binascii import crc_hqx

from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot

__all__ = ["marker_key", "redis_key", "slot_tags"]


def redis_key(namespace: str, token_id: str) -> str:
    """The Redis key that records ``token_id``: the namespace, ``:``, and SHA-256 of the id in hex."""
    return f"{namespace}:{hashlib.sha256(token_id.encode('utf-8', 'surrogatepass')).hexdigest()}"


def marker_key(namespace: str, key: str, *, cluster: bool) -> str:
    """The marker read with the claim of ``key``: ``namespace:marker``, or in a cluster its slot's own.

    A Redis Cluster loses keys one master at a time, so each hash slot has its
    own marker, which lives (and moves, and is lost) with the slot's claims:
    ``namespace:marker:{tag}``, where the hash tag puts it in ``key``'s slot.
    """
    if not cluster:
        return f"{namespace}:marker"
    return f"{namespace}:marker:{{{slot_tags()[key_slot(key.encode())]}}}"


@functools.cache
def slot_tags() -> tuple[str, ...]:
    """A hash tag for each of the 16384 slots: the first three alphanumeric characters that hash there.

    Built once per process (0.1 s), by the first cluster guard.
    """
    # A tag has no braces, so its slot is the CRC16 of the whole tag: key_slot would be slower.
    alphabet = (string.digits + string.ascii_letters).encode()
    tags: dict[int, str] = {}
    for letters in itertools.product(alphabet, repeat=3):
        tag = bytes(letters)
        tags.setdefault(crc_hqx(tag, 0) % REDIS_CLUSTER_HASH_SLOTS, tag.decode())
        if len(tags) == REDIS_CLUSTER_HASH_SLOTS:
            break
    return tuple(tags[slot] for slot in range(REDIS_CLUSTER_HASH_SLOTS))
