"""Identifiers: owner shards, reminder ids and delivery identities.

Every owner hashes to one of `SHARDS` logical shards. A reminder id is short, sorts by creation
time and carries its owner's shard, so any id routes to its shard without a lookup. A
scheduler part is a contiguous range of shards, so the number of parts can change without
rewriting a row.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime

SHARDS = 1024
# The pending-reminders index (reminders_due) leads with a shard's lane, one of LANES
# contiguous ranges of LANE_WIDTH shards (`shard / 64` in its definition), so that a scheduler
# part reads only its own rows: with the default 16 parts on PostgreSQL a part is a lane.
LANES = 16
LANE_WIDTH = SHARDS // LANES
_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford base32, lower case
_ID_CHARS = frozenset(_ALPHABET)
_ID_LENGTH = 20  # 100 bits: 48 of milliseconds, 10 of shard, 42 random
_RANDOM_BITS = 42  # a batch of 100,000 saved in one millisecond still collides ~never


def shard_of(owner: str) -> int:
    """The owner's logical shard, stable across processes, machines and releases."""
    digest = hashlib.blake2b(owner.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % SHARDS


def new_reminder_id(shard: int, now: datetime) -> str:
    """A new time-ordered id that carries `shard`."""
    millis = int(now.timestamp() * 1000) & ((1 << 48) - 1)
    value = (
        (millis << (10 + _RANDOM_BITS)) | (shard << _RANDOM_BITS) | secrets.randbits(_RANDOM_BITS)
    )
    chars = []
    for _ in range(_ID_LENGTH):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def is_id(text: str) -> bool:
    """Whether `text` has the shape of the ids `new_reminder_id` makes (a reminder's, a
    contact's). What has not names nothing stored, and need not be looked up: a NUL in it
    is an error of PostgreSQL's, not a row that is missing."""
    return len(text) == _ID_LENGTH and set(text) <= _ID_CHARS


def shard_of_id(reminder_id: str) -> int:
    """The shard a reminder id carries; ValueError for something that is not an id."""
    if len(reminder_id) != _ID_LENGTH:
        raise ValueError("not a reminder id")
    value = 0
    for char in reminder_id:
        index = _ALPHABET.find(char)
        if index < 0:
            raise ValueError("not a reminder id")
        value = (value << 5) | index
    return (value >> _RANDOM_BITS) & (SHARDS - 1)


def firing_id(reminder_id: str, due_at: datetime) -> str:
    """The delivery identity of one ring: the same (reminder, due instant) gives the same id."""
    return f"{reminder_id}.{int(due_at.timestamp())}"


def part_shards(part: int, parts: int) -> range:
    """The shards scheduler part `part` of `parts` covers (`parts` divides SHARDS)."""
    if parts <= 0 or SHARDS % parts:
        raise ValueError(f"parts must divide {SHARDS}, got {parts}")
    if not 0 <= part < parts:
        raise ValueError(f"part {part} is not in 0..{parts - 1}")
    width = SHARDS // parts
    return range(part * width, (part + 1) * width)


def lanes_of(shards: range) -> range:
    """The lanes a contiguous, non-empty range of shards falls in."""
    return range(shards.start // LANE_WIDTH, shards[-1] // LANE_WIDTH + 1)


def part_of_shard(shard: int, parts: int) -> int:
    """The scheduler part that holds `shard`."""
    return shard // (SHARDS // parts)
