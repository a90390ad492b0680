"""The scheduler's and delivery's side: load_due, claim, take_deliveries, record_attempts."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import replace
from datetime import datetime, timedelta

import asyncpg
import orjson
import pytest

from tests.integration.store.factories import (
    LEASE,
    NOW,
    claim,
    content_of,
    held,
    put_back,
    reminder,
    result,
)
from tests.support.raw import raw_pairs
from tocsin.domain import (
    Attempt,
    AttemptResult,
    Channel,
    DueRing,
    Fence,
    Firing,
    FiringState,
    Outcome,
    Reminder,
    ReminderStatus,
    Route,
)
from tocsin.ids import firing_id
from tocsin.store import Store, open_store
from tocsin.store.codec import bucket_of

ALL = range(1024)
MINUTE = timedelta(minutes=1)


async def test_load_due_reads_pending_rows_of_the_buckets_and_shards(store: Store) -> None:
    due = NOW + 5 * MINUTE
    inside = [reminder(due_at=due + timedelta(seconds=s), shard=100 + s) for s in (30, 0, 10)]
    other_shard = reminder(due_at=due, shard=500)
    other_minute = reminder(due_at=due + MINUTE, shard=100)
    cancelled = reminder(due_at=due, shard=101)
    await store.add_reminders([*inside, other_shard, other_minute, cancelled])
    await store.cancel_reminder(cancelled.id, now=NOW)

    got = await store.load_due(
        shards=range(100, 200), first_bucket=bucket_of(due), last_bucket=bucket_of(due), limit=10
    )
    two = await store.load_due(
        shards=range(100, 200), first_bucket=bucket_of(due), last_bucket=bucket_of(due), limit=2
    )
    both_minutes = await store.load_due(
        shards=range(100, 200),
        first_bucket=bucket_of(due),
        last_bucket=bucket_of(due) + 1,
        limit=10,
    )

    by_due = sorted(inside, key=lambda r: r.due_at or NOW)
    assert [r.reminder_id for r in got] == [r.id for r in by_due]
    assert got[0]._replace(content=None) == DueRing(
        by_due[0].id, due, by_due[0].freshness, None, by_due[0].version
    )
    # PostgreSQL's load reads what the claim writes of the ring; SQLite's claim reads it.
    assert got[0].content is None or orjson.loads(got[0].content) == orjson.loads(
        content_of(by_due[0])
    )
    assert [r.reminder_id for r in two] == [r.id for r in by_due[:2]]
    assert {r.reminder_id for r in both_minutes} == {r.id for r in [*inside, other_minute]}
    assert await store.load_due(shards=range(0), first_bucket=0, last_bucket=2**31, limit=9) == []
    # The sweep's read: only what is due by `until`, in the last bucket; earlier ones whole.
    by_then = await store.load_due(
        shards=range(100, 200),
        first_bucket=bucket_of(due) - 1,
        last_bucket=bucket_of(due) + 1,
        limit=10,
        until=due + MINUTE + timedelta(seconds=10),
    )
    assert [r.reminder_id for r in by_then] == [r.id for r in [*by_due, other_minute]]
    in_part = await store.load_due(
        shards=range(100, 200),
        first_bucket=bucket_of(due),
        last_bucket=bucket_of(due),
        limit=10,
        until=due + timedelta(seconds=10),
    )
    assert [r.reminder_id for r in in_part] == [r.id for r in by_due[:2]]


async def test_claim_a_one_off_fires_it_once(store: Store, backend: str) -> None:
    one_off = reminder(metadata={"k": "v"})
    await store.add_reminders([one_off])
    assert one_off.due_at is not None

    firings = await store.claim([claim(one_off)], sender="worker-1", now=NOW, lease=LEASE)
    again = await store.claim([claim(one_off)], sender="worker-2", now=NOW, lease=LEASE)

    [firing] = firings
    assert again == []
    assert firing.id == firing_id(one_off.id, one_off.due_at)
    assert (firing.reminder_id, firing.owner, firing.shard) == (
        one_off.id,
        one_off.owner,
        one_off.shard,
    )
    assert (firing.text, firing.metadata, firing.source) == (
        "Water the plants",
        {"k": "v"},
        "phone",
    )
    assert firing.due_at == one_off.due_at
    assert firing.deadline == one_off.due_at + timedelta(seconds=600)
    assert firing.state is FiringState.SENDING
    assert (firing.sender, firing.lease_until) == ("worker-1", NOW + LEASE)
    assert firing.attempts == 0
    assert firing.created_at == NOW
    saved = await store.get_reminder(one_off.id)
    assert saved is not None
    assert saved.status is ReminderStatus.FIRED
    assert saved.due_at is None
    assert saved.version == 1  # a claim leaves the reminder's row as its API writes made it
    # PostgreSQL writes the firing with its first try's outcome; SQLite at the claim.
    assert firing.stored is (backend == "sqlite")
    assert await store.list_firings(one_off.id) == ([firing] if firing.stored else [])


async def test_claim_moves_a_series_on_and_ends_it(store: Store) -> None:
    series = reminder(rule="FREQ=DAILY")
    await store.add_reminders([series])
    assert series.due_at is not None
    tomorrow = series.due_at + timedelta(days=1)

    [first] = await store.claim(
        [claim(series, next_due_at=tomorrow)], sender="w", now=NOW, lease=LEASE
    )
    moved = await store.get_reminder(series.id)
    due_tomorrow = await store.load_due(
        shards=ALL, first_bucket=bucket_of(tomorrow), last_bucket=bucket_of(tomorrow), limit=5
    )
    assert moved is not None
    [last] = await store.claim(
        [claim(moved, prev_due=series.due_at)], sender="w", now=NOW, lease=LEASE
    )
    ended = await store.get_reminder(series.id)
    recorded = await store.record_attempts([result(f, sender="w") for f in (first, last)])

    assert moved.status is ReminderStatus.PENDING
    assert moved.due_at == tomorrow
    assert [ring._replace(content=None) for ring in due_tomorrow] == [
        DueRing(
            moved.id,
            tomorrow,
            moved.freshness,
            moved.schedule,
            moved.version,
            prev_due=series.due_at,  # the ring before it
        )
    ]
    assert last.due_at == tomorrow
    assert ended is not None
    assert ended.status is ReminderStatus.ENDED
    assert recorded == 2
    assert {f.due_at for f in await store.list_firings(series.id)} == {series.due_at, tomorrow}


@pytest.mark.postgres
async def test_an_occurrence_holds_what_its_ring_says(pg_url: str) -> None:
    """PostgreSQL: the load reads what a ring says from its occurrence, as the API write and
    the claim that scheduled it wrote it (`due.ring`), and from its reminder's row for one
    saved without it (by a release before 0038): the same ring either way."""
    store = await open_store(pg_url)
    try:
        await store.migrate()
        series = reminder(rule="FREQ=DAILY", text="Feed the cat")
        one_off = reminder(text="Call mom")
        await store.add_reminders([series, one_off])
        assert series.due_at is not None
        tomorrow = series.due_at + timedelta(days=1)
        minute = bucket_of(series.due_at)

        async def loaded(first: datetime) -> list[DueRing]:
            bucket = bucket_of(first)
            return await store.load_due(
                shards=ALL, first_bucket=bucket, last_bucket=bucket, limit=9
            )

        saved = await loaded(series.due_at)
        connection = await asyncpg.connect(pg_url)
        try:
            rings = await connection.fetchval(
                "SELECT count(ring) FROM due WHERE bucket = $1", minute
            )
            await connection.execute("UPDATE due SET ring = NULL WHERE bucket = $1", minute)
            unsaid = await loaded(series.due_at)
            [ring] = [r for r in saved if r.reminder_id == series.id]
            await store.claim(
                [claim(series, next_due_at=tomorrow)], sender="w", now=NOW, lease=LEASE
            )
            carried = await connection.fetchval(
                "SELECT ring FROM due WHERE reminder_id = $1 AND due_at = $2", series.id, tomorrow
            )
        finally:
            await connection.close()
        [next_one] = await loaded(tomorrow)
    finally:
        await store.close()

    assert rings == 2
    assert [r.reminder_id for r in saved] == [r.reminder_id for r in unsaid]
    assert {r.reminder_id: orjson.loads(r.content or "") for r in saved} == {
        r.reminder_id: orjson.loads(r.content or "") for r in unsaid
    }
    assert [r._replace(content=None) for r in saved] == [r._replace(content=None) for r in unsaid]
    assert ring.schedule == series.schedule
    assert orjson.loads(ring.content or "") == orjson.loads(content_of(series))
    # The series' next occurrence carries the ring the claim was given, with its schedule.
    assert orjson.loads(carried or "") == orjson.loads(content_of(series))
    assert next_one._replace(content=None) == DueRing(
        series.id,
        tomorrow,
        series.freshness,
        series.schedule,
        series.version,
        prev_due=series.due_at,
    )


async def test_a_claim_at_a_due_time_the_row_left_changes_nothing(store: Store) -> None:
    one_off = reminder()
    await store.add_reminders([one_off])
    assert one_off.due_at is not None
    stale = claim(one_off)
    await store.update_reminder(
        replace(one_off, due_at=one_off.due_at + MINUTE),
        expected_version=1,
        waiting=one_off.due_at,
    )

    assert await store.claim([stale], sender="w", now=NOW, lease=LEASE) == []
    saved = await store.get_reminder(one_off.id)
    assert saved is not None
    assert saved.status is ReminderStatus.PENDING


async def test_a_claim_of_an_older_version_changes_nothing(store: Store) -> None:
    series = reminder(rule="FREQ=DAILY")
    await store.add_reminders([series])
    assert series.due_at is not None
    loaded = claim(series, next_due_at=series.due_at + timedelta(days=1))
    # Edited into a one-off at the same instant after the scheduler loaded it.
    edited = await store.update_reminder(
        replace(series, schedule=replace(series.schedule, rule=None), repeat=None),
        expected_version=1,
        waiting=series.due_at,
    )
    assert edited is not None

    assert await store.claim([loaded], sender="w", now=NOW, lease=LEASE) == []
    [fired] = await store.claim([claim(edited)], sender="w", now=NOW, lease=LEASE)
    saved = await store.get_reminder(series.id)
    assert saved is not None
    assert saved.status is ReminderStatus.FIRED  # the claim applied the edited rule
    assert fired.due_at == series.due_at


async def test_a_claim_fenced_by_an_old_lease_epoch_changes_nothing(store: Store) -> None:
    one_off = reminder()
    await store.add_reminders([one_off])
    held = await store.renew_leases("w", parts=1, ttl=LEASE)
    mine = claim(one_off)._replace(part=0)
    stale = Fence(parts=1, epochs={0: held.epochs[0] - 1})

    assert await store.claim([mine], sender="w", now=NOW, lease=LEASE, fence=stale) == []
    assert (
        await store.claim([mine], sender="other", now=NOW, lease=LEASE, fence=held.fence(1)) == []
    )
    assert (
        await store.claim([mine], sender="w", now=NOW, lease=LEASE, fence=Fence(parts=1, epochs={}))
        == []
    )
    [fired] = await store.claim([mine], sender="w", now=NOW, lease=LEASE, fence=held.fence(1))
    assert fired.reminder_id == one_off.id


async def test_a_failed_claim_records_why_and_ends_the_reminder(store: Store) -> None:
    series = reminder(rule="FREQ=DAILY")
    await store.add_reminders([series])
    bad = claim(series)._replace(state=FiringState.FAILED, error="the next ring cannot be found")

    [failed] = await store.claim([bad], sender="w", now=NOW, lease=LEASE)
    [listed] = await store.list_firings(series.id)
    saved = await store.get_reminder(series.id)

    assert failed.state is FiringState.FAILED
    assert failed.sender is None
    assert listed.last_error == "the next ring cannot be found"
    assert saved is not None
    assert saved.status is ReminderStatus.ENDED


async def test_claim_expired_records_the_firing_without_a_sender(store: Store) -> None:
    one_off = reminder()
    await store.add_reminders([one_off])

    [firing] = await store.claim(
        [claim(one_off, state=FiringState.EXPIRED)], sender="w", now=NOW, lease=LEASE
    )

    assert firing.state is FiringState.EXPIRED
    assert (firing.sender, firing.lease_until) == (None, None)
    assert (
        await store.take_deliveries(
            sender="w", shards=None, now=NOW + timedelta(hours=1), lease=LEASE, limit=10
        )
        == []
    )


async def test_a_firing_id_is_inserted_once(store: Store) -> None:
    one_off = reminder()
    await store.add_reminders([one_off])
    [rung] = await store.claim([claim(one_off)], sender="w", now=NOW, lease=LEASE)
    assert await store.record_attempts([result(rung, sender="w")]) == 1
    # The app puts the reminder back at the same due time: the ring has that identity already.
    back = await put_back(store, one_off)

    assert await store.claim([claim(back)], sender="w", now=NOW, lease=LEASE) == []
    assert len(await store.list_firings(one_off.id)) == 1


async def test_a_big_batch_claims_in_one_call(store: Store) -> None:
    batch = [reminder(f"owner-{n}") for n in range(2000)]
    await store.add_reminders(batch)

    firings = await store.claim([claim(r) for r in batch], sender="w", now=NOW, lease=LEASE)

    assert len(firings) == 2000
    assert {f.reminder_id for f in firings} == {r.id for r in batch}


async def test_two_concurrent_claims_of_the_same_rows_claim_each_once(
    store: Store, migrated_db_url: str
) -> None:
    batch = [reminder(f"owner-{n}") for n in range(300)]
    await store.add_reminders(batch)
    other = await open_store(migrated_db_url)
    claims = [claim(r) for r in batch]
    try:
        results = await asyncio.gather(
            store.claim(claims, sender="a", now=NOW, lease=LEASE),
            other.claim(list(reversed(claims)), sender="b", now=NOW, lease=LEASE),
            store.claim(claims[::2], sender="c", now=NOW, lease=LEASE),
        )
    finally:
        await other.close()

    claimed = [f.reminder_id for firings in results for f in firings]
    assert sorted(claimed) == sorted(r.id for r in batch)


async def test_a_batch_with_a_stale_and_a_current_claim_of_one_reminder_rings_it_once(
    store: Store,
) -> None:
    one_off = reminder()
    await store.add_reminders([one_off])
    assert one_off.due_at is not None
    stale = claim(one_off)
    moved = await store.update_reminder(
        replace(one_off, due_at=one_off.due_at + MINUTE), expected_version=1, waiting=one_off.due_at
    )
    assert moved is not None

    firings = await store.claim([stale, claim(moved)], sender="w", now=NOW, lease=LEASE)
    await store.record_attempts([result(f, sender="w") for f in firings])

    assert [f.due_at for f in firings] == [moved.due_at]
    assert [f.due_at for f in await store.list_firings(one_off.id)] == [moved.due_at]


async def test_cancel_and_claim_race_one_wins(store: Store) -> None:
    batch = [reminder(f"owner-{n}") for n in range(50)]
    await store.add_reminders(batch)

    cancels, firings = await asyncio.gather(
        asyncio.gather(*(store.cancel_reminder(r.id, now=NOW) for r in batch)),
        store.claim([claim(r) for r in batch], sender="w", now=NOW, lease=LEASE),
    )

    cancelled = {r.id for r in cancels if r is not None}
    fired = {f.reminder_id for f in firings}
    assert cancelled.isdisjoint(fired)
    assert cancelled | fired == {r.id for r in batch}


async def test_take_deliveries_hands_out_retries_due_and_stale_sends(store: Store) -> None:
    a, b, c = (reminder(f"owner-{n}") for n in range(3))
    await store.add_reminders([a, b, c])
    fa, fb, fc = _in_order(
        [a, b, c],
        await store.claim([claim(r) for r in (a, b, c)], sender="w1", now=NOW, lease=LEASE),
    )
    retry_at = NOW + timedelta(seconds=10)
    await store.record_attempts(
        [
            _to_retry(fa, error="503", at=retry_at),
            result(fb, sender="w1"),
        ]
    )

    early = NOW + timedelta(seconds=5)
    # fc's sender says nothing: its hold runs out (on PostgreSQL, its firing is written then).
    recovered_early = await store.recover_claims(now=early, limit=10)
    taken_early = await store.take_deliveries(
        sender="w2", shards=None, now=early, lease=LEASE, limit=10
    )
    later = NOW + LEASE + timedelta(seconds=1)
    recovered = await store.recover_claims(now=later, limit=10)
    taken = await store.take_deliveries(sender="w2", shards=None, now=later, lease=LEASE, limit=10)

    assert (recovered_early, taken_early) == (0, [])
    assert recovered == (0 if fc.stored else 1)
    assert {f.id for f in taken} == {fa.id, fc.id}  # fb was sent
    for firing in taken:
        assert firing.state is FiringState.SENDING
        assert (firing.sender, firing.lease_until) == ("w2", later + LEASE)
        assert firing.next_attempt_at is None
    retried = next(f for f in taken if f.id == fa.id)
    assert (retried.attempts, retried.last_error) == (1, "503")


async def test_take_deliveries_expires_firings_past_their_deadline(store: Store) -> None:
    one_off = reminder(freshness=60)
    await store.add_reminders([one_off])
    [firing] = await store.claim([claim(one_off)], sender="w1", now=NOW, lease=LEASE)

    await store.record_attempts([_to_retry(firing, error="HTTP 503", at=NOW + MINUTE)])

    late = firing.deadline + timedelta(seconds=1)
    taken = await store.take_deliveries(sender="w2", shards=None, now=late, lease=LEASE, limit=5)

    assert taken == []
    [expired] = await store.list_firings(one_off.id)
    assert expired.state is FiringState.EXPIRED
    assert expired.sender is None
    assert expired.last_error == (
        "expired: its deadline passed before it could be sent (last error: HTTP 503)"
    )


async def test_take_deliveries_takes_the_closest_deadlines_first(store: Store) -> None:
    """Retries due and sends whose sender vanished, in one order: by deadline."""
    queued = [reminder(f"queued-{s}", freshness=s) for s in (600, 300, 900)]
    abandoned = [reminder(f"abandoned-{s}", freshness=s) for s in (450, 700)]
    await store.add_reminders(queued + abandoned)
    await store.claim(
        [claim(r, state=FiringState.QUEUED) for r in queued], sender="w1", now=NOW, lease=LEASE
    )
    await store.claim([claim(r) for r in abandoned], sender="w1", now=NOW, lease=LEASE)
    later = NOW + LEASE + timedelta(seconds=1)
    await store.recover_claims(now=later, limit=10)  # the abandoned rings' hold ran out

    rounds = [
        await store.take_deliveries(sender="w2", shards=None, now=later, lease=LEASE, limit=2)
        for _ in range(3)
    ]

    def seconds(firings: list[Firing]) -> set[int]:
        return {int((f.deadline - f.due_at).total_seconds()) for f in firings}

    assert [seconds(taken) for taken in rounds] == [{300, 450}, {600, 700}, {900}]


async def test_take_deliveries_expires_the_overdue_without_crowding_out_the_fresh(
    store: Store,
) -> None:
    stale = [reminder(f"stale-{n}", freshness=60) for n in range(3)]
    fresh = [reminder(f"fresh-{n}", freshness=3600) for n in range(2)]
    await store.add_reminders(stale + fresh)
    firings = await store.claim(
        [claim(r, state=FiringState.QUEUED) for r in stale + fresh],
        sender="w1",
        now=NOW,
        lease=LEASE,
    )
    now = max(f.deadline for f in firings if f.reminder_id == stale[0].id) + MINUTE

    taken = await store.take_deliveries(sender="w2", shards=None, now=now, lease=LEASE, limit=2)
    again = await store.take_deliveries(sender="w2", shards=None, now=now, lease=LEASE, limit=2)

    assert {f.reminder_id for f in taken} == {r.id for r in fresh}
    assert again == []
    for one in stale:
        [expired] = await store.list_firings(one.id)
        assert expired.state is FiringState.EXPIRED
        assert expired.last_error == "expired: its deadline passed before it could be sent"


async def test_take_deliveries_filters_by_shard_and_limit(store: Store) -> None:
    batch = [reminder(shard=s) for s in (10, 11, 12, 900)]
    await store.add_reminders(batch)
    await store.claim(
        [claim(r, state=FiringState.QUEUED) for r in batch], sender="w", now=NOW, lease=LEASE
    )

    low = await store.take_deliveries(
        sender="w", shards=range(0, 64), now=NOW, lease=LEASE, limit=2
    )
    rest = await store.take_deliveries(
        sender="w", shards=range(0, 64), now=NOW, lease=LEASE, limit=10
    )
    high = await store.take_deliveries(sender="w", shards=None, now=NOW, lease=LEASE, limit=10)

    assert len(low) == 2
    assert {f.shard for f in low + rest} == {10, 11, 12}
    assert [f.shard for f in high] == [900]


async def test_each_delivery_goes_to_one_taker(store: Store, migrated_db_url: str) -> None:
    batch = [reminder(f"owner-{n}") for n in range(400)]
    await store.add_reminders(batch)
    await store.claim(
        [claim(r, state=FiringState.QUEUED) for r in batch], sender="w", now=NOW, lease=LEASE
    )
    other = await open_store(migrated_db_url)
    try:
        takes = await asyncio.gather(
            *(
                taker.take_deliveries(sender=f"t{n}", shards=None, now=NOW, lease=LEASE, limit=60)
                for n, taker in enumerate([store, other] * 5)
            )
        )
    finally:
        await other.close()

    taken = [f.id for firings in takes for f in firings]
    assert len(taken) == len(set(taken))
    assert len(taken) == 400


async def test_record_attempts_only_by_the_holder(store: Store) -> None:
    a, b = reminder("ana"), reminder("bob")
    await store.add_reminders([a, b])
    fa, fb = await held(store, [a, b], sender="w1")
    sent_at = NOW + timedelta(seconds=2)

    applied = await store.record_attempts(
        [
            result(fa, sender="w1", at=sent_at, provider_id="msg-1"),
            result(fb, sender="intruder"),
            result("missing.1", sender="w1"),
        ]
    )
    twice = await store.record_attempts([result(fa, sender="w1", number=2)])

    assert applied == 1
    assert twice == 0
    [sent] = await store.list_firings(a.id)
    assert sent.state is FiringState.SENT
    assert (sent.sent_at, sent.provider_id, sent.attempts) == (sent_at, "msg-1", 1)
    assert (sent.sender, sent.lease_until) == (None, None)
    assert [(h.number, h.outcome, h.provider_id) for h in sent.history] == [
        (1, Outcome.SENT, "msg-1")
    ]
    [untouched] = await store.list_firings(b.id)
    assert (untouched.state, untouched.sender) == (FiringState.SENDING, "w1")
    assert untouched.history == ()


async def test_a_result_repeated_in_one_batch_applies_once(store: Store) -> None:
    one_off = reminder()
    await store.add_reminders([one_off])
    [firing] = await store.claim([claim(one_off)], sender="w1", now=NOW, lease=LEASE)

    applied = await store.record_attempts(
        [
            result(firing, sender="w1", provider_id="first"),
            result(firing, sender="w1", number=2, provider_id="second"),
        ]
    )

    [sent] = await store.list_firings(one_off.id)
    assert applied == 1
    assert (sent.state, sent.attempts, sent.provider_id) == (FiringState.SENT, 1, "first")
    assert [h.number for h in sent.history] == [1]


async def test_failed_attempts_keep_their_history(store: Store) -> None:
    one_off = reminder()
    await store.add_reminders([one_off])
    [firing] = await store.claim([claim(one_off)], sender="w1", now=NOW, lease=LEASE)
    retry = NOW + timedelta(seconds=3)
    await store.record_attempts([_to_retry(firing, error="timeout", at=retry)])
    [again] = await store.take_deliveries(sender="w2", shards=None, now=retry, lease=LEASE, limit=1)
    await store.record_attempts(
        [
            result(
                again,
                sender="w2",
                number=2,
                at=retry,
                state=FiringState.FAILED,
                outcome=Outcome.FAILED,
                error="410 gone",
            )
        ]
    )

    [failed] = await store.list_firings(one_off.id)
    assert failed.state is FiringState.FAILED
    assert failed.last_error == "410 gone"
    assert failed.attempts == 2
    assert failed.next_attempt_at is None
    assert [(h.number, h.outcome, h.error) for h in failed.history] == [
        (1, Outcome.RETRY, "timeout"),
        (2, Outcome.FAILED, "410 gone"),
    ]


async def test_a_result_without_an_attempt_records_no_history(store: Store) -> None:
    one_off = reminder()
    await store.add_reminders([one_off])
    [firing] = await store.claim([claim(one_off)], sender="w1", now=NOW, lease=LEASE)

    applied = await store.record_attempts(
        [
            AttemptResult(
                firing_id=firing.id,
                sender="w1",
                state=FiringState.EXPIRED,
                error="too late",
                firing=None if firing.stored else firing,
            )
        ]
    )

    [expired] = await store.list_firings(one_off.id)
    assert applied == 1
    assert (expired.state, expired.last_error, expired.attempts) == (
        FiringState.EXPIRED,
        "too late",
        0,
    )
    assert (expired.sender, expired.lease_until, expired.sent_at) == (None, None, None)
    assert expired.history == ()


async def test_release_deliveries_hands_unsent_firings_back(store: Store) -> None:
    a, b, c = reminder("ana"), reminder("bob"), reminder("cy")
    await store.add_reminders([a, b, c])
    fa, fb, fc = _in_order(
        [a, b, c],
        await store.claim([claim(a), claim(b), claim(c)], sender="w1", now=NOW, lease=LEASE),
    )
    await store.record_attempts([result(fc, sender="w1")])
    later = NOW + timedelta(seconds=1)

    released = await store.release_deliveries([fa, fc], sender="w1", now=later)
    taken = await store.take_deliveries(sender="w2", shards=None, now=later, lease=LEASE, limit=9)

    assert released == 1
    assert [f.id for f in taken] == [fa.id]
    assert (taken[0].state, taken[0].sender, taken[0].attempts) == (FiringState.SENDING, "w2", 0)
    assert taken[0].stored
    # Not handed back: still w1's, as SQLite's claim wrote it, or not written yet (PostgreSQL).
    still = await store.list_firings(b.id)
    assert [(f.state, f.sender) for f in still] == (
        [(FiringState.SENDING, "w1")] if fb.stored else []
    )
    [sent] = await store.list_firings(c.id)
    assert sent.state is FiringState.SENT


async def test_release_deliveries_of_firings_held_after_a_take(store: Store) -> None:
    """Firings written `sending` and taken (a retry, or a ring whose sender's hold ran out)
    go back by their rows: only the holder's, only while still `sending`."""
    a, b, c = reminder("ana"), reminder("bob"), reminder("cy")
    await store.add_reminders([a, b, c])
    fa, fb, fc = await held(store, [a, b, c], sender="w1")
    await store.record_attempts([result(fc, sender="w1")])
    later = NOW + timedelta(seconds=1)

    released = await store.release_deliveries([fa, fc], sender="w1", now=later)
    not_mine = await store.release_deliveries([fb], sender="w2", now=later)
    missing = await store.release_deliveries([fa._replace(id=f"{a.id}.1")], sender="w1", now=later)
    taken = await store.take_deliveries(sender="w2", shards=None, now=later, lease=LEASE, limit=9)

    assert (released, not_mine, missing) == (1, 0, 0)
    assert [f.id for f in taken] == [fa.id]
    [still] = await store.list_firings(b.id)
    assert (still.state, still.sender) == (FiringState.SENDING, "w1")


async def test_load_due_pages_by_keyset(store: Store) -> None:
    due = NOW + 5 * MINUTE
    same_second = [reminder(f"o{n}", due_at=due, shard=100 + n) for n in range(4)]
    later = reminder("late", due_at=due + timedelta(seconds=30), shard=100)
    await store.add_reminders([*same_second, later])
    bucket = bucket_of(due)

    def page(after: tuple[datetime, str] | None) -> Awaitable[list[DueRing]]:
        return store.load_due(
            shards=range(100, 200), first_bucket=bucket, last_bucket=bucket, limit=2, after=after
        )

    first = await page(None)
    second = await page((first[-1].due_at, first[-1].reminder_id))
    third = await page((second[-1].due_at, second[-1].reminder_id))

    by_key = sorted(same_second, key=lambda r: r.id)
    assert [r.reminder_id for r in first + second] == [r.id for r in by_key]
    assert [r.reminder_id for r in third] == [later.id]


def _to_retry(firing: Firing, *, error: str, at: datetime) -> AttemptResult:
    """Worker w1's first attempt at `firing` failed: retry `at`."""
    return result(
        firing,
        sender="w1",
        state=FiringState.QUEUED,
        outcome=Outcome.RETRY,
        error=error,
        next_attempt_at=at,
    )


def _first_try(firing: Firing, *, state: FiringState, attempt: Attempt) -> AttemptResult:
    """Worker w1's first try of `firing`, as delivery reports it (with the firing itself
    when its row is not written yet)."""
    return AttemptResult(
        firing_id=firing.id,
        sender="w1",
        state=state,
        attempt=attempt,
        firing=None if firing.stored else firing,
    )


def _in_order(reminders: list[Reminder], firings: list[Firing]) -> list[Firing]:
    by_reminder = {firing.reminder_id: firing for firing in firings}
    return [by_reminder[r.id] for r in reminders]


async def test_a_route_is_copied_to_its_firing_and_settled_attempts_are_keyed(
    store: Store,
) -> None:
    """A chain's text travels from the reminder to its firing; `settled_destinations`
    keys an attempt with no destination (a step with nowhere to ring) by its channel, and
    leaves out retries."""
    chain = Route((Channel.EMAIL, Channel.WEBHOOK), fallback=True)
    one_off = replace(reminder(), channel=chain)
    await store.add_reminders([one_off])
    [firing] = await store.claim([claim(one_off)], sender="w1", now=NOW, lease=LEASE)
    tried = [
        Attempt(number=1, at=NOW, channel=Channel.EMAIL, outcome=Outcome.FAILED, error="none"),
        Attempt(number=2, at=NOW, channel=Channel.WEBHOOK, outcome=Outcome.RETRY, destination="c1"),
        Attempt(number=3, at=NOW, channel=Channel.WEBHOOK, outcome=Outcome.SENT, destination="c2"),
    ]
    await store.record_attempts(
        [
            AttemptResult(
                firing_id=firing.id,
                sender="w1",
                state=FiringState.SENT,
                attempt=tried[-1],
                earlier=tuple(tried[:-1]),
                firing=None if firing.stored else firing,
            )
        ]
    )

    [stored] = await store.list_firings(one_off.id)
    assert firing.channel == stored.channel == chain
    saved = await store.get_reminder(one_off.id)
    assert saved is not None
    assert saved.channel == chain
    assert await store.settled_destinations(firing.id) == {
        "channel:email": Outcome.FAILED,
        "c2": Outcome.SENT,
    }


async def test_a_first_try_accepted_is_kept_on_the_firing_row(
    store: Store, migrated_db_url: str
) -> None:
    """The common ring writes no attempts row: its one attempt stays on the firing row, and
    the history and the settled destinations give it back as the row would have said it. A
    first try on a route of several channels, and a retry, still get their rows."""
    plain, routed, retried = reminder("ana"), reminder("bob"), reminder("cy")
    routed = replace(routed, channel=Route((Channel.WEBHOOK, Channel.EMAIL)))
    await store.add_reminders([plain, routed, retried])
    claimed = await store.claim(
        [claim(plain), claim(routed), claim(retried)], sender="w1", now=NOW, lease=LEASE
    )
    fp, fr, ft = _in_order([plain, routed, retried], claimed)
    first = Attempt(
        number=1,
        at=NOW + timedelta(seconds=2),
        channel=Channel.WEBHOOK,
        outcome=Outcome.SENT,
        provider_id="msg-1",
        destination="app:crm",
    )
    retry = first._replace(outcome=Outcome.RETRY, provider_id=None, error="503")
    later = NOW + timedelta(seconds=5)

    await store.record_attempts(
        [
            _first_try(fp, state=FiringState.SENT, attempt=first),
            _first_try(fr, state=FiringState.SENT, attempt=first),
            _first_try(ft, state=FiringState.QUEUED, attempt=retry)._replace(next_attempt_at=later),
        ]
    )
    [again] = await store.take_deliveries(sender="w2", shards=None, now=later, lease=LEASE, limit=1)
    second = first._replace(number=2, at=later)
    await store.record_attempts(
        [AttemptResult(firing_id=again.id, sender="w2", state=FiringState.SENT, attempt=second)]
    )

    rows = await raw_pairs(
        migrated_db_url, "SELECT firing_id, count(*) FROM attempts GROUP BY firing_id"
    )
    assert dict(rows) == {fr.id: 1, ft.id: 2}
    [kept] = await store.list_firings(plain.id)
    [routed_firing] = await store.list_firings(routed.id)
    [retried_firing] = await store.list_firings(retried.id)
    assert kept.history == routed_firing.history == (first,)
    assert retried_firing.history == (retry, second)
    assert (kept.state, kept.attempts, kept.sent_at, kept.provider_id, kept.last_error) == (
        FiringState.SENT,
        1,
        first.at,
        "msg-1",
        None,
    )
    assert await store.settled_destinations(fp.id) == {"app:crm": Outcome.SENT}
