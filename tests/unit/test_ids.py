"""Ids carry their shard, sort by time and do not collide; parts cover the shards exactly."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tocsin.ids import (
    SHARDS,
    firing_id,
    is_id,
    new_reminder_id,
    part_of_shard,
    part_shards,
    shard_of,
    shard_of_id,
)

NOW = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)


@given(st.text(min_size=1, max_size=128))
def test_an_owner_always_gets_the_same_shard(owner: str) -> None:
    assert shard_of(owner) == shard_of(owner)
    assert 0 <= shard_of(owner) < SHARDS


def test_shards_are_stable_across_releases() -> None:
    # Rows and leases are keyed by these values: changing the hash would strand data.
    assert [shard_of(owner) for owner in ("ana", "bob", "user:42")] == [572, 146, 642]


@given(st.integers(min_value=0, max_value=SHARDS - 1))
def test_an_id_carries_its_shard(shard: int) -> None:
    assert shard_of_id(new_reminder_id(shard, NOW)) == shard


def test_ids_sort_by_creation_time() -> None:
    earlier = new_reminder_id(1023, NOW)
    later = new_reminder_id(0, NOW + timedelta(milliseconds=1))
    assert earlier < later


def test_a_large_batch_in_one_millisecond_does_not_collide() -> None:
    ids = {new_reminder_id(7, NOW) for _ in range(100_000)}
    assert len(ids) == 100_000


@pytest.mark.parametrize(
    "text", ["", "short", "I" * 20, "0123456789abcdefghj!", "0123456789abcdefghj\x00"]
)
def test_something_else_is_not_an_id(text: str) -> None:
    assert not is_id(text)
    with pytest.raises(ValueError, match="not a reminder id"):
        shard_of_id(text)


@given(st.integers(min_value=0, max_value=SHARDS - 1), st.text(max_size=40))
def test_what_is_an_id_has_a_shard_and_every_made_id_is_one(shard: int, text: str) -> None:
    assert is_id(new_reminder_id(shard, NOW))
    if is_id(text):
        assert 0 <= shard_of_id(text) < SHARDS
    else:
        with pytest.raises(ValueError, match="not a reminder id"):
            shard_of_id(text)


def test_a_firing_id_is_derived_from_reminder_and_due_instant() -> None:
    reminder = new_reminder_id(3, NOW)
    assert firing_id(reminder, NOW) == firing_id(reminder, NOW)
    assert firing_id(reminder, NOW) != firing_id(reminder, NOW + timedelta(minutes=1))


@pytest.mark.parametrize("parts", [1, 2, 16, 1024])
def test_parts_cover_every_shard_once(parts: int) -> None:
    covered = [shard for part in range(parts) for shard in part_shards(part, parts)]
    assert covered == list(range(SHARDS))
    assert all(
        part_of_shard(shard, parts) == part
        for part in range(parts)
        for shard in part_shards(part, parts)
    )


@pytest.mark.parametrize(("part", "parts"), [(0, 3), (0, 0), (16, 16), (-1, 16)])
def test_bad_parts_are_refused(part: int, parts: int) -> None:
    with pytest.raises(ValueError, match="part"):
        part_shards(part, parts)
