"""The pieces of a full part's admission rule: pushing the latest waiting entries out, and
the keyset cursor that reads a pushed-out row again."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from tocsin.scheduler.loader import just_before
from tocsin.scheduler.timeline import Entry, Timeline

ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # the ids' own (Crockford base32)
ids = st.text(alphabet=ALPHABET, min_size=20, max_size=20)
T = datetime(2026, 3, 2, 18, 0, tzinfo=UTC)


@given(ids, ids)
def test_just_before_an_id_sorts_between_it_and_every_id_before_it(a: str, b: str) -> None:
    low, high = sorted((a, b))
    if low == high:
        return
    assert low < just_before(high) < high


def entry(n: int, seconds: int, part: int = 0) -> Entry:
    return Entry.make(f"{n:020d}", T + timedelta(seconds=seconds), part, None, 600, 1)


def test_the_latest_waiting_entries_are_pushed_out_and_taken_ones_never() -> None:
    timeline = Timeline()
    timeline.add([entry(n, n) for n in range(10)] + [entry(99, 50, part=1)])
    taken = timeline.take_due(T + timedelta(seconds=2))  # 0, 1, 2: being claimed
    assert timeline.latest_waiting(0) == entry(9, 9)

    evicted = timeline.evict_latest(0, 3, after=entry(5, 5))
    assert evicted == [entry(7, 7), entry(8, 8), entry(9, 9)]  # earliest first
    assert timeline.held(0) == 7
    assert timeline.held(1) == 1  # another part's entries stay
    assert timeline.evict_latest(0, 10, after=entry(5, 5)) == [entry(6, 6)]
    assert timeline.evict_latest(0, 10, after=entry(0, -1)) == [
        entry(3, 3),
        entry(4, 4),
        entry(5, 5),
    ]
    assert [one.reminder_id for one in taken] == [f"{n:020d}" for n in range(3)]
    assert timeline.held(0) == 3  # only the taken ones, until released
    assert timeline.next_second() == entry(99, 50, part=1).second
