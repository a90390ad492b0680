"""A reader finds a reminder's newest ring where its timeline says it may be (`looking`): the
rings are kept in due order, with nothing indexing them by reminder, and retention prunes
the ones before a version's newest. Tested on both backends, through the store's readers."""

from __future__ import annotations

from datetime import datetime, timedelta

from tests.integration.store.factories import LEASE, NOW, claim, edited, reminder, result
from tocsin.domain import FiringState, Reminder, ReminderStatus
from tocsin.store import Store

DAY = timedelta(days=1)
START = NOW - 40 * DAY


async def _daily(store: Store, rings: int) -> Reminder:
    """A daily series from START that rang `rings` times, each ring recorded sent, its next
    occurrence waiting after the last."""
    series = reminder(due_at=START, rule="FREQ=DAILY", created_at=START - DAY)
    await store.add_reminders([series])
    for n in range(rings):
        due = START + n * DAY
        current = await store.get_reminder(series.id, now=due)
        assert current is not None
        assert current.due_at == due
        [firing] = await store.claim(
            [claim(current, next_due_at=due + DAY)], sender="worker-1", now=due, lease=LEASE
        )
        await store.record_attempts([result(firing, at=due)])
        assert await store.recover_claims(now=due + LEASE + timedelta(seconds=1), limit=9) == 0
    return series


async def _prune(store: Store, before: datetime) -> None:
    for _ in range(20):
        pruned = await store.prune(
            firings_before=before, reminders_before=before, keys_before=before, limit=100
        )
        if pruned.firings == pruned.rings == 0:
            return


async def test_a_series_newest_ring_is_found_with_its_first_rings_pruned(store: Store) -> None:
    series = await _daily(store, 40)
    await _prune(store, NOW - 5 * DAY)

    now = await store.get_reminder(series.id, now=NOW - timedelta(seconds=1))
    assert now is not None
    assert now.status is ReminderStatus.PENDING
    assert now.due_at == NOW  # the 41st occurrence waits
    assert now.last_firing is not None
    assert now.last_firing.due_at == NOW - DAY
    assert now.last_firing.state is FiringState.SENT
    [listed] = await store.list_reminders("ana", now=NOW - timedelta(seconds=1))
    assert (listed.due_at, listed.last_firing) == (now.due_at, now.last_firing)


async def test_a_series_behind_for_longer_than_the_first_look_is_found(store: Store) -> None:
    """Nothing rang for 20 days (an outage): the latest instants the reader looks at first
    hold no ring, its first rings are pruned, and it looks further back."""
    series = await _daily(store, 20)
    await _prune(store, NOW - 5 * DAY)

    now = await store.get_reminder(series.id, now=NOW)
    assert now is not None
    assert now.status is ReminderStatus.PENDING
    assert now.due_at == START + 20 * DAY  # overdue: it rings at once when workers are back
    assert now.last_firing is not None
    assert now.last_firing.due_at == START + 19 * DAY
    [pending] = await store.list_reminders("ana", status=ReminderStatus.PENDING, now=NOW)
    assert pending.due_at == now.due_at


async def test_an_edit_keeps_the_last_ring_for_readers_of_the_new_version(store: Store) -> None:
    series = await _daily(store, 3)
    current = await store.get_reminder(series.id, now=START + 3 * DAY)
    assert current is not None
    assert current.last_firing is not None
    rang = current.last_firing

    saved = await store.update_reminder(
        edited(current, text="Water the tomatoes", updated_at=START + 3 * DAY),
        expected_version=current.version,
        waiting=current.due_at,
    )
    assert saved is not None
    assert saved.last_firing == rang
    again = await store.get_reminder(series.id, now=START + 3 * DAY)
    assert again is not None
    assert (again.version, again.due_at, again.last_firing) == (2, START + 3 * DAY, rang)

    cancelled = await store.cancel_reminder(series.id, now=START + 3 * DAY)
    assert cancelled is not None
    assert cancelled.status is ReminderStatus.CANCELLED
    assert cancelled.last_firing == rang
