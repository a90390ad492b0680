"""The numbers metrics read from the store at each scrape: the delivery queue's depth by
state, and the oldest pending reminder's due time, on both backends."""

from __future__ import annotations

from datetime import timedelta

from tests.integration.store.factories import LEASE, NOW, claim, held, reminder, result
from tocsin.domain import FiringState, Outcome, ReminderStatus
from tocsin.store import Store


async def test_an_empty_store_has_an_empty_queue(store: Store) -> None:
    stats = await store.queue_stats()

    assert dict(stats.depth) == {"queued": 0, "sending": 0}
    assert stats.oldest_due is None


async def test_the_oldest_pending_reminder_is_found_across_buckets(store: Store) -> None:
    overdue = reminder("ana", due_at=NOW - timedelta(minutes=5, seconds=30))
    await store.add_reminders(
        [
            reminder("bo", due_at=NOW + timedelta(minutes=10)),
            overdue,
            reminder("cy", due_at=NOW + timedelta(hours=1)),
            reminder("di", status=ReminderStatus.CANCELLED),
        ]
    )

    stats = await store.queue_stats()

    assert stats.oldest_due == overdue.due_at


async def test_the_queue_counts_firings_being_sent_and_waiting_for_a_retry(store: Store) -> None:
    first, second, third, fourth = (reminder(f"owner-{n}") for n in range(4))
    await store.add_reminders([first, second, third, fourth])
    await held(store, [fourth])  # written `sending`, taken by a sender
    firings = await store.claim(
        [claim(first), claim(second), claim(third)], sender="worker-1", now=NOW, lease=LEASE
    )
    retry_at = NOW + timedelta(seconds=30)
    await store.record_attempts(
        [
            result(firings[0], state=FiringState.QUEUED, outcome=Outcome.RETRY,
                   error="503", next_attempt_at=retry_at),
            result(firings[1]),
        ]
    )  # fmt: skip

    stats = await store.queue_stats()

    # The third's first try is in flight: a `sending` row on SQLite, none yet on PostgreSQL.
    in_flight = 1 if firings[2].stored else 0
    assert dict(stats.depth) == {"queued": 1, "sending": 1 + in_flight}
    assert stats.oldest_due is None  # all four one-offs were claimed: none pending
