"""The in-app feed's side of the store: announcements, what waits for a page, and the
conditional record that a page received a ring — on both backends."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import timedelta

from tests.integration.store.factories import LEASE, NOW, claim, reminder, result
from tests.support.raw import raw_execute, raw_pairs
from tocsin.domain import Channel, Firing, FiringState, Outcome, Reminder, one
from tocsin.store import Store
from tocsin.store.base import FEED_WAITING

SECOND = timedelta(seconds=1)


def inapp(owner: str = "ana", *, due_in: int = 0, freshness: int = 600) -> Reminder:
    made = reminder(owner, due_at=NOW + due_in * SECOND, freshness=freshness)
    return replace(made, channel=one(Channel.INAPP))


async def rung(store: Store, *reminders: Reminder) -> list[Firing]:
    """Claimed by worker-1 (the feed's `queued` for a page, the others `sending`), in the
    order given."""
    await store.add_reminders(list(reminders))
    firings = await store.claim(
        [claim(r) for r in reminders], sender="worker-1", now=NOW, lease=LEASE
    )
    by_reminder = {f.reminder_id: f for f in firings}
    return [by_reminder[r.id] for r in reminders]


async def test_a_page_gets_what_waits_for_its_owner_in_due_order(store: Store) -> None:
    later, sooner, stale = inapp(due_in=2), inapp(due_in=1), inapp(due_in=-60, freshness=30)
    others = [inapp("bob"), replace(inapp(), channel=one(Channel.WEBHOOK))]
    f_later, f_sooner, _, *_ = await rung(store, later, sooner, stale, *others)
    now = NOW + 5 * SECOND

    waiting = await store.feed_firings("ana", now=now)

    assert [f.id for f in waiting] == [f_sooner.id, f_later.id]
    assert waiting[0].state is FiringState.QUEUED
    assert waiting[0].history == ()


async def test_after_an_event_the_ones_sent_after_it_come_again(store: Store) -> None:
    one, two, three, four = await rung(store, *(inapp(due_in=n) for n in range(1, 5)))
    now = NOW + 5 * SECOND
    assert await store.mark_feed_sent([one.id, two.id, three.id], at=now) == 3

    after_one = await store.feed_firings("ana", now=now, after=one.id)
    unknown = await store.feed_firings("ana", now=now, after="nothing.1")
    # Ids of no firing's shape (a page's last event is what its client sends) name none.
    odd = [
        await store.feed_firings("ana", now=now, after=after)
        for after in ("no-dot", f"{one.reminder_id}.99999999999999999999", f"{one.id}.7")
    ]
    not_hers = await store.feed_firings("bob", now=now, after=one.id)
    past = await store.feed_firings("ana", now=NOW + timedelta(hours=1), after=one.id)

    assert [f.id for f in after_one] == [two.id, three.id, four.id]
    assert [f.id for f in unknown] == [four.id]  # what waits, only
    assert [[f.id for f in found] for found in odd] == [[four.id]] * 3
    assert await store.mark_feed_sent(["no-dot", f"{four.id}0000000000000"], at=now) == 0
    assert not_hers == []
    assert past == []  # nothing past its deadline


async def test_the_replay_follows_the_order_rings_were_sent_not_their_due_order(
    store: Store,
) -> None:
    """Events go out in the order rings were claimed and written: a ring due earlier than
    the page's last event may be sent after it (another claim batch committed later). It is
    replayed; one sent well before the last event is not."""
    before, earlier, last = await rung(store, *(inapp(due_in=n) for n in (3, 1, 2)))
    now = NOW + 10 * SECOND
    await store.mark_feed_sent([before.id], at=now - 5 * SECOND)
    await store.mark_feed_sent([last.id], at=now)
    await store.mark_feed_sent([earlier.id], at=now + 3 * SECOND)  # due first, sent last

    replay = await store.feed_firings("ana", now=now + 4 * SECOND, after=last.id)

    assert [f.id for f in replay] == [earlier.id]


async def test_marking_sent_is_conditional_and_recorded(store: Store) -> None:
    fresh, stale = await rung(store, inapp(due_in=1), inapp(due_in=1, freshness=30))
    at = NOW + 40 * SECOND  # past the stale one's deadline

    first = await store.mark_feed_sent([fresh.id, stale.id], at=at)
    again = await store.mark_feed_sent([fresh.id], at=at)
    late = await store.record_attempts(
        [result(fresh.id, state=FiringState.QUEUED, outcome=Outcome.RETRY)]
    )

    assert (first, again, late) == (1, 0, 0)
    [saved] = await store.list_firings(fresh.reminder_id)
    assert (saved.state, saved.sent_at, saved.attempts, saved.sender) == (
        FiringState.SENT,
        at,
        1,
        None,
    )
    [attempt] = saved.history
    assert (attempt.outcome, attempt.destination, attempt.channel) == (
        Outcome.SENT,
        "feed",
        Channel.INAPP,
    )
    [unsent] = await store.list_firings(stale.reminder_id)
    assert unsent.state is FiringState.QUEUED


async def test_a_claim_queues_a_feed_ring_for_a_page_and_announces_it(store: Store) -> None:
    heard: list[tuple[str, str]] = []
    stop = await store.listen_feed(
        lambda owner, ring: heard.append((owner, ring)), on_gap=lambda: None
    )
    try:
        feed, hook = await rung(
            store, inapp(due_in=1), replace(inapp(), channel=one(Channel.WEBHOOK))
        )
        for _ in range(50):  # PostgreSQL delivers the NOTIFY after the commit
            if heard:
                break
            await asyncio.sleep(0.05)
    finally:
        stop()

    assert heard == [("ana", feed.id)]
    [saved] = await store.list_firings(feed.reminder_id)
    assert (saved.state, saved.attempts, saved.sender, saved.lease_until) == (
        FiringState.QUEUED,
        0,
        None,
        None,
    )
    assert saved.next_attempt_at == saved.deadline == feed.deadline == feed.next_attempt_at
    assert saved.last_error == FEED_WAITING
    assert hook.state is FiringState.SENDING


async def test_a_ring_a_worker_held_gets_its_page_attempt_after_the_workers(
    store: Store, migrated_db_url: str
) -> None:
    """A feed ring a worker took over and held (as workers of earlier versions did, and the
    in-app sender still does for a ring it is handed): the page's attempt comes after the
    worker's, each a row."""
    [firing] = await rung(store, inapp(due_in=1))
    await raw_execute(
        migrated_db_url,
        f"UPDATE firings SET state = 'sending', sender = 'worker-1', next_attempt_at = NULL "
        f"WHERE reminder_id = '{firing.reminder_id}'",  # its one firing
    )
    waiting = result(
        firing.id,
        state=FiringState.QUEUED,
        outcome=Outcome.RETRY,
        next_attempt_at=firing.deadline,
    )
    assert await store.record_attempts([waiting]) == 1

    assert await store.feed_rings([firing.id, "nothing.1"], now=NOW) != []
    assert await store.mark_feed_sent([firing.id], at=NOW + SECOND) == 1
    [saved] = await store.list_firings(firing.reminder_id)
    assert [a.number for a in saved.history] == [1, 2]
    assert saved.next_attempt_at is None
    rows = await raw_pairs(migrated_db_url, "SELECT firing_id, count(*) FROM attempts GROUP BY 1")
    assert dict(rows) == {firing.id: 2}


async def test_a_page_keeps_its_ring_on_the_firing_row(store: Store, migrated_db_url: str) -> None:
    """The page's attempt is the ring's first: it stays on the firing row (no attempts row),
    as a first try accepted by any channel does, and the history says it all the same. A
    worker's result, late, changes nothing."""
    [firing] = await rung(store, inapp(due_in=1))
    at = NOW + 2 * SECOND

    assert await store.mark_feed_sent([firing.id], at=at) == 1
    late = result(firing.id, state=FiringState.QUEUED, outcome=Outcome.RETRY)
    assert await store.record_attempts([late]) == 0

    assert await raw_pairs(migrated_db_url, "SELECT firing_id, number FROM attempts") == []
    [kept] = await store.list_firings(firing.reminder_id)
    assert (kept.state, kept.attempts, kept.sent_at, kept.last_error) == (
        FiringState.SENT,
        1,
        at,
        None,
    )
    [attempt] = kept.history
    assert (attempt.number, attempt.at, attempt.outcome, attempt.channel, attempt.destination) == (
        1,
        at,
        Outcome.SENT,
        Channel.INAPP,
        "feed",
    )
    assert await store.settled_destinations(firing.id) == {"feed": Outcome.SENT}


async def test_feed_rings_leaves_out_the_final_and_the_stale(store: Store) -> None:
    kept, expired = await rung(store, inapp(due_in=1), inapp(due_in=1, freshness=30))
    other = (await rung(store, replace(inapp(), channel=one(Channel.WEBHOOK))))[0]
    # Pickup expires the stale one (its deadline passed); the fresh one waits for a page.
    taken = await store.take_deliveries(
        sender="w2", shards=None, now=NOW + 40 * SECOND, lease=LEASE, limit=10
    )
    assert kept.id not in {f.id for f in taken}

    found = await store.feed_rings([kept.id, expired.id, other.id], now=NOW)

    assert [f.id for f in found] == [kept.id]
    assert await store.feed_rings([kept.id], now=kept.deadline) == []


async def test_announcements_reach_the_listeners(store: Store) -> None:
    heard: list[tuple[str, str]] = []
    done = asyncio.Event()

    def listener(owner: str, firing_id: str) -> None:
        heard.append((owner, firing_id))
        if len(heard) == 2:
            done.set()

    stop = await store.listen_feed(listener, on_gap=lambda: None)
    await store.announce_feed([("ana", "r1.100"), ("bob:x@y", "r2.200")])
    await asyncio.wait_for(done.wait(), 5)
    stop()
    await store.announce_feed([("ana", "r3.300")])
    await asyncio.sleep(0.2)

    assert heard == [("ana", "r1.100"), ("bob:x@y", "r2.200")]
