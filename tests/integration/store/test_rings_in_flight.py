"""Rings in flight: on PostgreSQL a claim hands a ring to its sender without writing its
firing (`Firing.stored` False), and the firing is written once — by the first try's result,
by `release_deliveries`, or by `recover_claims` once the sender's hold ran out. On SQLite
the claim writes it `sending`, and the same calls come to the same ends."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from tests.integration.store.factories import LEASE, NOW, claim, put_back, reminder, result
from tests.support.raw import raw_execute, raw_pairs
from tocsin.domain import (
    AttemptResult,
    Channel,
    Firing,
    FiringState,
    FiringSummary,
    Outcome,
    Reminder,
    one,
)
from tocsin.ids import firing_id
from tocsin.store import Store, open_store

HOLD = NOW + LEASE  # the hold of a claim made at NOW
AFTER = HOLD + timedelta(seconds=1)
RECOVERED = "its sender did not record it before its hold ran out: sent again"


async def _claimed(store: Store, *targets: Reminder, sender: str = "w1") -> list[Firing]:
    """Save and claim `targets` at NOW for `sender`; their rings, in the order of `targets`."""
    await store.add_reminders(list(targets))
    firings = await store.claim([claim(t) for t in targets], sender=sender, now=NOW, lease=LEASE)
    by_reminder = {f.reminder_id: f for f in firings}
    return [by_reminder[t.id] for t in targets]


async def _claimed_series(store: Store) -> tuple[Reminder, Firing]:
    """A daily series saved and its first ring claimed at NOW by w1: the series as saved and
    the ring."""
    series = reminder(rule="FREQ=DAILY")
    await store.add_reminders([series])
    assert series.due_at is not None
    [ringing] = await store.claim(
        [claim(series, next_due_at=series.due_at + timedelta(days=1))],
        sender="w1",
        now=NOW,
        lease=LEASE,
    )
    return series, ringing


async def _claims_left(url: str) -> int:
    """How many claims PostgreSQL still keeps a record of (SQLite keeps none)."""
    if url.startswith("sqlite"):
        return 0
    [(count, _)] = await raw_pairs(url, "SELECT count(*), 0 FROM claimed_rings")
    return int(count)


async def test_a_claim_writes_the_ring_to_send_only_on_sqlite(
    store: Store, backend: str, migrated_db_url: str
) -> None:
    ana, bo = reminder("ana"), reminder("bo")
    await store.add_reminders([ana, bo])
    failed = claim(bo)._replace(state=FiringState.FAILED, error="no next ring")
    [sending] = await store.claim([claim(ana)], sender="w1", now=NOW, lease=LEASE)
    [not_sent] = await store.claim([failed], sender="w1", now=NOW, lease=LEASE)

    assert sending.stored is (backend == "sqlite")
    assert (sending.state, sending.sender, sending.lease_until) == (
        FiringState.SENDING,
        "w1",
        HOLD,
    )
    assert await store.list_firings(sending.reminder_id) == ([sending] if sending.stored else [])
    assert await _claims_left(migrated_db_url) == (0 if sending.stored else 1)
    # A ring with nothing to send is written at the claim on both.
    assert not_sent.stored
    assert await store.list_firings(bo.id) == [not_sent]


async def test_recover_claims_writes_a_ring_left_unwritten_queued_under_its_identity(
    store: Store, migrated_db_url: str
) -> None:
    one_off = reminder(metadata={"k": "v"})
    [claimed] = await _claimed(store, one_off)

    recovered = await store.recover_claims(now=AFTER, limit=10)
    [taken] = await store.take_deliveries(
        sender="w2", shards=None, now=AFTER, lease=LEASE, limit=10
    )

    # Taken again under the same identity, whichever backend: the receiver can tell the two
    # sends of one ring apart from two rings.
    assert taken.id == claimed.id == firing_id(one_off.id, claimed.due_at)
    assert (taken.state, taken.sender, taken.lease_until) == (
        FiringState.SENDING,
        "w2",
        AFTER + LEASE,
    )
    assert (taken.attempts, taken.stored) == (0, True)
    assert (taken.text, taken.metadata, taken.channel, taken.deadline) == (
        claimed.text,
        claimed.metadata,
        claimed.channel,
        claimed.deadline,
    )
    if claimed.stored:  # SQLite: the claim wrote it, its lease ran out
        assert (recovered, taken.last_error) == (0, None)
    else:
        assert (recovered, taken.last_error) == (1, RECOVERED)
    assert await _claims_left(migrated_db_url) == 0


@pytest.mark.postgres
async def test_a_recovered_ring_is_queued_for_any_sender_at_once(pg_migrated_url: str) -> None:
    store = await open_store(pg_migrated_url)
    try:
        [claimed] = await _claimed(store, reminder())
        assert await store.recover_claims(now=AFTER, limit=10) == 1
        [written] = await store.list_firings(claimed.reminder_id)
    finally:
        await store.close()

    assert written == claimed._replace(
        state=FiringState.QUEUED,
        sender=None,
        lease_until=None,
        next_attempt_at=AFTER,
        created_at=AFTER,
        last_error=RECOVERED,
        stored=True,
    )


async def test_recover_claims_leaves_a_written_ring_alone(
    store: Store, migrated_db_url: str
) -> None:
    [claimed] = await _claimed(store, reminder())
    assert await store.record_attempts([result(claimed, sender="w1")]) == 1

    recovered = await store.recover_claims(now=AFTER, limit=10)

    assert recovered == 0
    [sent] = await store.list_firings(claimed.reminder_id)
    assert (sent.state, sent.attempts, sent.last_error) == (FiringState.SENT, 1, None)
    assert await _claims_left(migrated_db_url) == 0  # the claim is forgotten all the same
    assert (
        await store.take_deliveries(sender="w2", shards=None, now=AFTER, lease=LEASE, limit=9) == []
    )


async def test_a_claim_goes_with_its_last_firing_written(
    store: Store, migrated_db_url: str
) -> None:
    """Its sender's write of a claim's last firing deletes the claim, before its hold runs
    out: recovery never reads a claim whose rings were all written (a released ring counts)."""
    first, second, third = await _claimed(store, reminder("ana"), reminder("bo"), reminder("cy"))

    await store.record_attempts([result(first, sender="w1"), result(second, sender="w1")])
    open_after_two = await _claims_left(migrated_db_url)
    await store.release_deliveries([third], sender="w1", now=NOW + timedelta(seconds=1))
    open_after_all = await _claims_left(migrated_db_url)

    assert open_after_two == (0 if first.stored else 1)
    assert open_after_all == 0
    assert await store.recover_claims(now=AFTER, limit=10) == 0


async def test_a_claim_its_sender_wrote_late_is_recoverys(
    store: Store, migrated_db_url: str
) -> None:
    """A claim whose hold ran out before its sender wrote its rings (the sender claimed again
    after that) is left to recovery, which deletes it; the late write still applies."""
    [late] = await _claimed(store, reminder("ana"))
    bo = reminder("bo")
    await store.add_reminders([bo])
    [on_time] = await store.claim([claim(bo)], sender="w1", now=AFTER, lease=LEASE)

    await store.record_attempts([result(late, sender="w1"), result(on_time, sender="w1")])
    left = await _claims_left(migrated_db_url)
    recovered = await store.recover_claims(now=AFTER + timedelta(seconds=1), limit=10)

    assert left == (0 if late.stored else 1)
    assert recovered == 0  # its ring is written: recovery only forgets the claim
    assert await _claims_left(migrated_db_url) == 0
    [sent] = await store.list_firings(late.reminder_id)
    assert sent.state == FiringState.SENT


async def test_recover_claims_does_nothing_before_the_hold_runs_out(
    store: Store, migrated_db_url: str
) -> None:
    [claimed] = await _claimed(store, reminder())

    early = [await store.recover_claims(now=at, limit=10) for at in (NOW, HOLD)]
    left = await _claims_left(migrated_db_url)
    listed = await store.list_firings(claimed.reminder_id)
    later = await store.recover_claims(now=AFTER, limit=10)

    assert early == [0, 0]
    assert left == (0 if claimed.stored else 1)
    assert listed == ([claimed] if claimed.stored else [])
    assert later == (0 if claimed.stored else 1)


async def test_recover_claims_takes_up_to_limit_claims_oldest_hold_first(
    store: Store, migrated_db_url: str
) -> None:
    await store.add_reminders([a := reminder("ana"), b := reminder("bo"), c := reminder("cy")])
    # Two claims: one of a and b, and a later one of c.
    first = await store.claim([claim(a), claim(b)], sender="w1", now=NOW, lease=LEASE)
    await store.claim([claim(c)], sender="w1", now=NOW + timedelta(seconds=1), lease=LEASE)
    later = AFTER + timedelta(seconds=1)

    one = await store.recover_claims(now=later, limit=1)
    rest = await store.recover_claims(now=later, limit=1)
    none = await store.recover_claims(now=later, limit=1)

    if first[0].stored:
        assert (one, rest, none) == (0, 0, 0)
    else:
        assert (one, rest, none) == (2, 1, 0)  # limit counts claims, each of its rings
        assert {f.reminder_id for f in await _written(store, a, b, c)} == {a.id, b.id, c.id}
    assert await _claims_left(migrated_db_url) == 0


async def _written(store: Store, *targets: Reminder) -> list[Firing]:
    return [f for t in targets for f in await store.list_firings(t.id)]


async def test_a_late_result_applies_to_a_recovered_ring_no_sender_took(store: Store) -> None:
    """The sender was slow, not gone: its result still counts once recovery wrote the ring
    for another sender, while none took it; the ring is then not sent again."""
    [claimed] = await _claimed(store, reminder())
    await store.recover_claims(now=AFTER, limit=10)
    sent_at = AFTER + timedelta(seconds=1)

    applied = await store.record_attempts(
        [result(claimed, sender="w1", at=sent_at, provider_id="msg-1")]
    )

    [sent] = await store.list_firings(claimed.reminder_id)
    assert (sent.state, sent.attempts, sent.sent_at, sent.provider_id) == (
        FiringState.SENT,
        1,
        sent_at,
        "msg-1",
    )
    assert (sent.sender, sent.next_attempt_at) == (None, None)
    assert [(h.number, h.outcome) for h in sent.history] == [(1, Outcome.SENT)]
    assert applied == 1
    assert (
        await store.take_deliveries(sender="w2", shards=None, now=sent_at, lease=LEASE, limit=9)
        == []
    )


async def test_a_batch_with_one_late_result_writes_the_others_too(store: Store) -> None:
    """One result of a batch meets the firing recovery wrote: the batch is written all the
    same, each result applied to its own ring."""
    [late] = await _claimed(store, reminder("ana"))
    await store.recover_claims(now=AFTER, limit=10)
    await store.add_reminders([bo := reminder("bo")])
    [fresh] = await store.claim([claim(bo)], sender="w1", now=AFTER, lease=LEASE)

    applied = await store.record_attempts(
        [
            result(late, sender="w1", provider_id="late"),
            result(fresh, sender="w1", provider_id="fresh"),
        ]
    )

    written = [f for r in (late, fresh) for f in await store.list_firings(r.reminder_id)]
    assert applied == 2
    assert [(f.state, f.provider_id) for f in written] == [
        (FiringState.SENT, "late"),
        (FiringState.SENT, "fresh"),
    ]


async def test_a_late_result_is_refused_once_another_sender_took_the_ring(store: Store) -> None:
    [claimed] = await _claimed(store, reminder())
    await store.recover_claims(now=AFTER, limit=10)
    [taken] = await store.take_deliveries(sender="w2", shards=None, now=AFTER, lease=LEASE, limit=9)

    late = await store.record_attempts([result(claimed, sender="w1", provider_id="late")])
    [held] = await store.list_firings(claimed.reminder_id)
    own = await store.record_attempts([result(taken, sender="w2", provider_id="w2's")])
    [sent] = await store.list_firings(claimed.reminder_id)

    assert late == 0
    assert (held.state, held.sender, held.attempts, held.history) == (
        FiringState.SENDING,
        "w2",
        0,
        (),
    )
    assert own == 1
    assert (sent.state, sent.provider_id, sent.attempts) == (FiringState.SENT, "w2's", 1)


async def test_a_late_result_is_refused_after_another_senders_retry(store: Store) -> None:
    [claimed] = await _claimed(store, reminder())
    await store.recover_claims(now=AFTER, limit=10)
    [taken] = await store.take_deliveries(sender="w2", shards=None, now=AFTER, lease=LEASE, limit=9)
    retry_at = AFTER + timedelta(seconds=5)
    await store.record_attempts(
        [
            result(
                taken,
                sender="w2",
                state=FiringState.QUEUED,
                outcome=Outcome.RETRY,
                error="503",
                next_attempt_at=retry_at,
            )
        ]
    )

    late = await store.record_attempts([result(claimed, sender="w1")])

    [queued] = await store.list_firings(claimed.reminder_id)
    assert late == 0
    assert (queued.state, queued.attempts, queued.last_error) == (FiringState.QUEUED, 1, "503")


async def test_a_first_try_writes_the_ring_with_its_result(store: Store) -> None:
    """A ring claimed and tried is written once, as the try left it: retried later, sent,
    failed — each with its attempt."""
    retried, sent, failed = await _claimed(store, reminder("ana"), reminder("bo"), reminder("cy"))
    retry_at = NOW + timedelta(seconds=10)

    applied = await store.record_attempts(
        [
            result(retried, sender="w1", state=FiringState.QUEUED, outcome=Outcome.RETRY,
                   error="503", next_attempt_at=retry_at),
            result(sent, sender="w1", provider_id="msg-1"),
            result(failed, sender="w1", state=FiringState.FAILED, outcome=Outcome.FAILED,
                   error="410 gone"),
        ]
    )  # fmt: skip
    again = await store.record_attempts([result(sent, sender="w1", number=2)])

    [q], [s], [f] = [await store.list_firings(x.reminder_id) for x in (retried, sent, failed)]
    assert (applied, again) == (3, 0)
    assert (q.state, q.attempts, q.next_attempt_at, q.last_error) == (
        FiringState.QUEUED,
        1,
        retry_at,
        "503",
    )
    assert (s.state, s.attempts, s.provider_id, s.sent_at) == (FiringState.SENT, 1, "msg-1", NOW)
    assert (f.state, f.last_error) == (FiringState.FAILED, "410 gone")
    for written in (q, s, f):
        assert (written.sender, written.lease_until, len(written.history)) == (None, None, 1)
        assert written.id == firing_id(written.reminder_id, written.due_at)


async def test_release_deliveries_writes_unwritten_rings_queued(store: Store) -> None:
    firings = await _claimed(store, reminder("ana"), reminder("bo"))
    later = NOW + timedelta(seconds=1)

    released = await store.release_deliveries(firings, sender="w1", now=later)
    taken = await store.take_deliveries(sender="w2", shards=None, now=later, lease=LEASE, limit=9)

    assert released == 2
    assert {f.id for f in taken} == {f.id for f in firings}
    assert {(f.state, f.sender, f.attempts, f.last_error) for f in taken} == {
        (FiringState.SENDING, "w2", 0, None)
    }


async def test_release_deliveries_by_another_sender_hands_nothing_back(store: Store) -> None:
    """Only the sender a ring was handed to may hand it back: another's release would queue a
    ring still being sent, for a second send."""
    [claimed] = await _claimed(store, reminder(), sender="w1")

    not_mine = await store.release_deliveries([claimed], sender="w2", now=NOW)
    taken = await store.take_deliveries(sender="w3", shards=None, now=NOW, lease=LEASE, limit=9)

    assert (not_mine, taken) == (0, [])


async def test_a_result_carrying_its_firing_counts_only_from_its_sender(store: Store) -> None:
    [claimed] = await _claimed(store, reminder(), sender="w1")

    intruder = await store.record_attempts([result(claimed, sender="intruder")])
    listed = await store.list_firings(claimed.reminder_id)
    own = await store.record_attempts([result(claimed, sender="w1")])

    assert (intruder, own) == (0, 1)
    assert [(f.state, f.sender) for f in listed] == (
        [(FiringState.SENDING, "w1")] if claimed.stored else []
    )


async def test_a_ring_claimed_again_before_it_is_written_is_written_once(store: Store) -> None:
    """Put back at the instant it rang while its first ring is in flight: the claim finds
    that identity rung (its ring, or on SQLite its firing) and rings it no more; only the
    first ring's result writes it."""
    one_off = reminder()
    [first] = await _claimed(store, one_off)
    back = await put_back(store, one_off)

    again = await store.claim([claim(back)], sender="w2", now=NOW, lease=LEASE)
    results = [result(first, sender="w1", provider_id="first")] + [
        result(f, sender="w2", provider_id="second") for f in again
    ]
    applied = [await store.record_attempts([r]) for r in results]
    recovered = await store.recover_claims(now=AFTER, limit=10)

    assert again == []
    assert applied == [1]
    [written] = await store.list_firings(one_off.id)
    assert (written.state, written.provider_id, written.attempts) == (FiringState.SENT, "first", 1)
    assert recovered == 0


async def test_a_ring_whose_firing_was_written_rings_no_more(store: Store) -> None:
    """Written by recovery, not by a result: a claim of the same instant still rings no more."""
    one_off = reminder()
    [first] = await _claimed(store, one_off)
    await store.recover_claims(now=AFTER, limit=10)
    back = await put_back(store, one_off)

    assert await store.claim([claim(back)], sender="w2", now=AFTER, lease=LEASE) == []
    assert [f.id for f in await store.list_firings(one_off.id)] == [first.id]


async def test_a_ring_in_flight_is_snoozed_once_its_firing_is_written(store: Store) -> None:
    """A snooze links the new one-off to the ring's firing: PostgreSQL has none to link to
    until the ring's first try is recorded (the API answers 409 `ringing` meanwhile)."""
    series = reminder(rule="FREQ=DAILY")
    [ringing] = await _claimed(store, series)
    first, second = (replace(reminder(), snoozed_from=ringing.id) for _ in range(2))

    early = await store.snooze_firing(ringing.id, first)
    await store.record_attempts([result(ringing, sender="w1")])
    later = await store.snooze_firing(ringing.id, second)

    # Not written (None) is no snooze of anyone's: the API answers 409 `ringing` for it.
    by = first.id if ringing.stored else second.id
    assert (early, later) == ((by, by) if ringing.stored else (None, by))
    [listed] = await store.list_firings(series.id)
    assert listed.snoozed_by == by
    assert await store.get_reminder(first.id if ringing.stored else second.id) is not None
    assert await store.get_reminder(second.id if ringing.stored else first.id) is None


async def test_a_ring_in_flight_shows_as_its_reminders_last_firing(store: Store) -> None:
    series, ringing = await _claimed_series(store)
    in_flight = FiringSummary(id=ringing.id, due_at=ringing.due_at, state=FiringState.SENDING)

    got = await store.get_reminder(series.id, now=NOW)
    [listed] = await store.list_reminders(series.owner, now=NOW)
    assert got is not None
    edited = await store.update_reminder(
        replace(got, text="Water the garden"), expected_version=got.version, waiting=got.due_at
    )
    assert edited is not None
    await store.record_attempts([result(ringing, sender="w1")])
    sent = await store.get_reminder(series.id, now=NOW)
    cancelled = await store.cancel_reminder(series.id, now=NOW)

    assert got.last_firing == listed.last_firing == edited.last_firing == in_flight
    assert sent is not None
    assert cancelled is not None
    assert sent.last_firing == cancelled.last_firing == replace(in_flight, state=FiringState.SENT)


async def test_a_ring_in_flight_shows_until_its_firing_is_written(store: Store) -> None:
    """Past its deadline a ring's firing is written (sent, or expired by a take), unless its
    claim is not recovered yet: it still shows as on its way then, the reminder's last ring
    (its row of `rings` stays while its version does), never the ring before it."""
    one_off = reminder(freshness=60)
    [ringing] = await _claimed(store, one_off)

    before = await store.get_reminder(one_off.id, now=ringing.deadline - timedelta(seconds=1))
    after = await store.get_reminder(one_off.id, now=ringing.deadline)

    assert before is not None
    assert after is not None
    assert before.last_firing == FiringSummary(
        id=ringing.id, due_at=ringing.due_at, state=FiringState.SENDING
    )
    assert after.last_firing == before.last_firing


async def test_a_later_ring_in_flight_shows_over_the_last_written_one(store: Store) -> None:
    series = reminder(rule="FREQ=MINUTELY")
    await store.add_reminders([series])
    assert series.due_at is not None
    next_due = series.due_at + timedelta(minutes=1)
    [first] = await store.claim(
        [claim(series, next_due_at=next_due)], sender="w1", now=NOW, lease=LEASE
    )
    await store.record_attempts([result(first, sender="w1")])
    moved = await store.get_reminder(series.id)
    assert moved is not None
    [second] = await store.claim(
        [claim(moved, next_due_at=next_due + timedelta(minutes=1))],
        sender="w1",
        now=NOW,
        lease=LEASE,
    )

    got = await store.get_reminder(series.id, now=NOW)

    assert got is not None
    assert got.last_firing == FiringSummary(
        id=second.id, due_at=next_due, state=FiringState.SENDING
    )


A_HOOK = "https://a.example/hook"  # where the first sender sent the ring, on its webhook


async def _claimed_then_edited(store: Store) -> tuple[Firing, Reminder]:
    """A series claimed on the webhook at NOW, its ring left unwritten, then edited to email
    with a freshness shorter than the ring's: the ring and the reminder as edited."""
    series, ringing = await _claimed_series(store)
    current = await store.get_reminder(series.id)
    assert current is not None
    edited = await store.update_reminder(
        replace(current, channel=one(Channel.EMAIL), freshness=60, updated_at=NOW),
        expected_version=current.version,
        waiting=current.due_at,
    )
    assert edited is not None
    return ringing, edited


def _sent_to_a_hook(ringing: Firing) -> AttemptResult:
    """The first sender's result: `ringing` accepted at A_HOOK on its first try."""
    accepted = result(ringing, sender="w1", at=AFTER)
    assert accepted.attempt is not None
    return accepted._replace(attempt=accepted.attempt._replace(destination=A_HOOK))


async def test_a_ring_taken_over_goes_where_and_by_when_its_claim_said(store: Store) -> None:
    """An edit after the claim changes the reminder's next rings, not the one on its way:
    taken over after its hold, it goes on the channel it was claimed on, by its deadline."""
    ringing, edited = await _claimed_then_edited(store)

    await store.recover_claims(now=AFTER, limit=10)
    [taken] = await store.take_deliveries(
        sender="w2", shards=None, now=AFTER, lease=LEASE, limit=10
    )

    assert edited.channel == one(Channel.EMAIL)
    assert (taken.id, taken.channel, taken.deadline) == (
        ringing.id,
        one(Channel.WEBHOOK),
        ringing.due_at + timedelta(seconds=600),
    )


async def test_a_late_result_after_an_edit_is_written_on_the_claimed_channel(
    store: Store,
) -> None:
    ringing, _ = await _claimed_then_edited(store)
    await store.recover_claims(now=AFTER, limit=10)

    applied = await store.record_attempts([_sent_to_a_hook(ringing)])

    [sent] = await store.list_firings(ringing.reminder_id)
    assert applied == 1
    assert (sent.state, sent.channel, sent.deadline) == (
        FiringState.SENT,
        one(Channel.WEBHOOK),
        ringing.deadline,
    )
    assert [(h.channel, h.destination) for h in sent.history] == [(Channel.WEBHOOK, A_HOOK)]


@pytest.mark.postgres
async def test_a_late_result_keeps_its_destination_off_a_ring_on_another_channel(
    pg_migrated_url: str,
) -> None:
    """A claim of the release before kept no route: its ring is recovered on the row's
    channel of then. The first sender's late result still counts (the ring was sent), but
    the webhook's destination is an attempts row of its own, not the email firing's."""
    store = await open_store(pg_migrated_url)
    try:
        ringing, _ = await _claimed_then_edited(store)
        await raw_execute(
            pg_migrated_url, "UPDATE claimed_rings SET routes = NULL, freshness = NULL"
        )
        await store.recover_claims(now=AFTER, limit=10)
        applied = await store.record_attempts([_sent_to_a_hook(ringing)])
        [sent] = await store.list_firings(ringing.reminder_id)
        [on_row] = await raw_pairs(pg_migrated_url, "SELECT sent_to, channel FROM firings")
    finally:
        await store.close()

    assert applied == 1
    assert (sent.state, sent.channel) == (FiringState.SENT, one(Channel.EMAIL))
    assert on_row == (None, "email")
    assert [(h.number, h.channel, h.destination) for h in sent.history] == [
        (1, Channel.WEBHOOK, A_HOOK)
    ]
