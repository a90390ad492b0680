"""The engine's pure decisions: claims (fresh, stale, missed series), the timeline's
bookkeeping, and Retry-After headers (the retry policy: tests/unit/test_retry.py). No I/O:
these pin the rules down one by one."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tocsin.channels.webhook import parse_retry_after
from tocsin.domain import FiringState, Schedule
from tocsin.scheduler.planning import plan, plan_one
from tocsin.scheduler.timeline import Entry, Timeline

SIX = datetime(2026, 3, 2, 18, 0, tzinfo=UTC)
EVERY_5 = Schedule(
    zone="Europe/Paris", anchor=datetime(2026, 3, 2, 19, 0), rule="FREQ=MINUTELY;INTERVAL=5"
)


def entry(
    due: datetime,
    schedule: Schedule | None = None,
    freshness: int = 600,
    part: int = 0,
    version: int = 1,
) -> Entry:
    return Entry.make(f"r{part}.{int(due.timestamp())}", due, part, schedule, freshness, version)


def minutes(n: float) -> timedelta:
    return timedelta(minutes=n)


# -- claims ----------------------------------------------------------------------------------


def test_a_one_off_on_time_is_sent() -> None:
    claim, follow_up = plan_one(entry(SIX), SIX)
    assert (claim.state, claim.next_due_at, follow_up) == (FiringState.SENDING, None, None)


def test_a_late_one_off_inside_its_freshness_is_still_sent() -> None:
    claim, _ = plan_one(entry(SIX), SIX + minutes(9))
    assert claim.state is FiringState.SENDING


def test_a_one_off_past_its_freshness_is_expired() -> None:
    claim, _ = plan_one(entry(SIX), SIX + minutes(10))
    assert claim.state is FiringState.EXPIRED


def test_a_series_on_time_moves_on_to_its_next_occurrence() -> None:
    claim, follow_up = plan_one(entry(SIX, EVERY_5), SIX)
    assert (claim.state, claim.next_due_at, follow_up) == (
        FiringState.SENDING,
        SIX + minutes(5),
        None,
    )


def test_a_series_that_missed_several_rings_only_its_newest_fresh_occurrence() -> None:
    now = SIX + minutes(31)
    claim, follow_up = plan_one(entry(SIX, EVERY_5), now)
    assert claim.state is FiringState.EXPIRED
    assert claim.next_due_at == SIX + minutes(30)
    assert follow_up is not None
    assert follow_up.due_at == SIX + minutes(30)
    # …which, claimed next, rings and moves on to the next future occurrence.
    again, more = plan_one(follow_up, now)
    assert (again.state, again.next_due_at, more) == (FiringState.SENDING, SIX + minutes(35), None)


def test_a_series_whose_missed_occurrences_are_all_stale_goes_on_from_the_future() -> None:
    claim, follow_up = plan_one(entry(SIX, EVERY_5, freshness=60), SIX + minutes(33))
    assert claim.state is FiringState.EXPIRED
    assert claim.next_due_at == SIX + minutes(35)
    assert follow_up is None


def test_a_batch_keys_its_follow_ups_by_the_claim_that_leads_to_them() -> None:
    decided = plan([entry(SIX), entry(SIX, EVERY_5)], SIX + minutes(12))
    assert len(decided.claims) == 2
    assert [e.due_at for e in decided.follow_ups.values()] == [SIX + minutes(10)]


def test_a_row_that_cannot_be_planned_fails_alone() -> None:
    broken = Schedule(
        zone="Mars/Olympus_Mons", anchor=datetime(2026, 3, 2, 19, 0), rule="FREQ=DAILY"
    )
    decided = plan([entry(SIX, part=1), entry(SIX, broken, part=2), entry(SIX, EVERY_5)], SIX)

    states = [claim.state for claim in decided.claims]
    assert states == [FiringState.SENDING, FiringState.FAILED, FiringState.SENDING]
    bad = decided.claims[1]
    assert bad.next_due_at is None  # the reminder ends, and says why
    assert bad.error is not None
    assert "cannot be worked out" in bad.error
    assert decided.claims[2].next_due_at == SIX + minutes(5)


def test_a_claim_carries_the_version_loaded_and_a_follow_up_the_next() -> None:
    decided = plan([entry(SIX, EVERY_5, version=7)], SIX + minutes(12))
    [claim] = decided.claims
    [follow_up] = decided.follow_ups.values()
    assert claim.version == 7
    assert follow_up.version == 7  # a claim leaves the reminder's version alone


def test_the_timeline_holds_an_edited_row_beside_the_loaded_one() -> None:
    timeline = Timeline()
    assert timeline.add([entry(SIX, version=1)]) == 1
    assert timeline.add([entry(SIX, version=1)]) == 0  # held already
    assert timeline.add([entry(SIX, version=2)]) == 1  # edited since: a ring of its own
    assert timeline.holds(entry(SIX, version=2))
    assert [e.version for e in timeline.take_due(SIX)] == [1, 2]


# -- Retry-After -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "seconds"),
    [("120", 120.0), (None, None), ("soon", None), ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0)],
)
def test_retry_after_headers(header: str | None, seconds: float | None) -> None:
    assert parse_retry_after(header) == seconds


# -- the timeline ----------------------------------------------------------------------------


def test_the_timeline_gives_out_what_is_due_by_the_second_once() -> None:
    timeline = Timeline()
    ones = [entry(SIX + timedelta(seconds=s)) for s in (2, 0, 1, 1)]
    assert timeline.add(ones) == 3, "the same ring is held once"
    assert timeline.add([ones[0]]) == 0
    assert timeline.next_second() == int(SIX.timestamp())
    assert [e.due_at for e in timeline.take_due(SIX + timedelta(seconds=1, milliseconds=500))] == [
        SIX,
        SIX + timedelta(seconds=1),
    ]
    assert timeline.held(0) == 3, "taken out, still counted until released"
    assert timeline.taken(0) == 2
    assert timeline.add([ones[1]]) == 0, "a ring being claimed is not loaded again"


def test_the_timeline_counts_by_part_and_bucket_and_drops_a_part() -> None:
    timeline = Timeline()
    timeline.add([entry(SIX, part=0), entry(SIX + minutes(1), part=0), entry(SIX, part=1)])
    bucket = int(SIX.timestamp()) // 60
    assert timeline.count(0, bucket, bucket) == 1
    assert timeline.count(0, bucket, bucket + 1) == 2
    assert timeline.count(0, 0, bucket + 1) == 2, "a long range is counted too"
    timeline.drop_part(0)
    assert timeline.held(0) == 0
    assert [e.part for e in timeline.take_due(SIX + minutes(5))] == [1]
