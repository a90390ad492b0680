"""`listen_due`: saving or moving a reminder due soon wakes the scheduler, on both backends."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta

import asyncpg
import pytest

from tests.integration.store.factories import LEASE, NOW, claim, edited, reminder, result
from tocsin.domain import ReminderStatus
from tocsin.store import Store, codec, open_store
from tocsin.store.postgres.wakeups import Wakeups

Heard = list[tuple[int, datetime]]


def recorder() -> tuple[Heard, Callable[[int, datetime], None]]:
    heard: Heard = []
    return heard, lambda shard, due_at: heard.append((shard, due_at))


async def eventually(check: Callable[[], bool], seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


async def settle() -> None:
    """Give a NOTIFY that should not arrive the time to arrive anyway."""
    await asyncio.sleep(0.2)


async def test_saving_a_reminder_due_soon_wakes_listeners(store: Store) -> None:
    heard, listener = recorder()
    await store.listen_due(listener)
    soon = reminder(due_at=NOW + timedelta(seconds=90, microseconds=500))
    later = reminder(due_at=NOW + timedelta(minutes=3))
    overdue = reminder("bob", due_at=NOW - timedelta(seconds=5))

    await store.add_reminders([soon, later, overdue])

    await eventually(lambda: len(heard) == 2)
    await settle()
    assert sorted(heard) == sorted(
        [(soon.shard, NOW + timedelta(seconds=90)), (overdue.shard, NOW - timedelta(seconds=5))]
    )


async def test_a_batch_due_at_one_second_wakes_once_per_shard(store: Store) -> None:
    heard, listener = recorder()
    await store.listen_due(listener)
    due = NOW + timedelta(seconds=30)

    await store.add_reminders([reminder(due_at=due, shard=7) for _ in range(20)])

    await eventually(lambda: len(heard) == 1)
    await settle()
    assert heard == [(7, due)]


async def test_edits_and_snoozes_that_bring_a_reminder_near_wake_listeners(store: Store) -> None:
    far = reminder(due_at=NOW + timedelta(hours=2))
    series = reminder(rule="FREQ=DAILY", due_at=NOW + timedelta(hours=1))
    await store.add_reminders([far, series])
    [firing] = await store.claim(
        [claim(series, next_due_at=NOW + timedelta(days=1))], sender="w", now=NOW, lease=LEASE
    )
    await store.record_attempts([result(firing, sender="w")])  # it rang: it can be snoozed
    heard, listener = recorder()
    await store.listen_due(listener)
    later = NOW + timedelta(minutes=5)
    near = later + timedelta(seconds=20)
    snoozed = replace(reminder(due_at=later + timedelta(seconds=40), created_at=later))

    await store.update_reminder(
        edited(far, due_at=near, updated_at=later), expected_version=1, waiting=far.due_at
    )
    await store.snooze_firing(firing.id, snoozed)

    await eventually(lambda: len(heard) == 2)
    assert heard == [(far.shard, near), (snoozed.shard, later + timedelta(seconds=40))]


async def test_writes_that_leave_nothing_due_soon_stay_quiet(store: Store) -> None:
    original = reminder(due_at=NOW + timedelta(hours=1))
    await store.add_reminders([original])
    heard, listener = recorder()
    await store.listen_due(listener)

    await store.update_reminder(
        edited(original, text="later"), expected_version=1, waiting=original.due_at
    )
    await store.update_reminder(
        edited(original, status=ReminderStatus.ENDED, due_at=None),
        expected_version=2,
        waiting=original.due_at,
    )
    await store.update_reminder(  # stale
        edited(original, due_at=NOW), expected_version=1, waiting=original.due_at
    )
    await store.add_reminders([reminder(status=ReminderStatus.CANCELLED)])

    await settle()
    assert heard == []


async def test_a_stopped_listener_hears_nothing_more(store: Store) -> None:
    heard, listener = recorder()
    kept, keeper = recorder()
    stop = await store.listen_due(listener)
    await store.listen_due(keeper)
    stop()
    stop()  # stopping twice is harmless

    await store.add_reminders([reminder(due_at=NOW)])

    await eventually(lambda: len(kept) == 1)
    assert heard == []


async def test_a_failing_listener_does_not_stop_the_others(store: Store) -> None:
    def broken(shard: int, due_at: datetime) -> None:
        raise RuntimeError("boom")

    heard, listener = recorder()
    await store.listen_due(broken)
    await store.listen_due(listener)

    await store.add_reminders([reminder(due_at=NOW)])

    await eventually(lambda: len(heard) == 1)


@pytest.mark.postgres
async def test_other_processes_hear_the_wake_up(pg_migrated_url: str) -> None:
    api, worker = await open_store(pg_migrated_url), await open_store(pg_migrated_url)
    try:
        heard, listener = recorder()
        await worker.listen_due(listener)
        due = reminder(due_at=NOW)

        await api.add_reminders([due])

        await eventually(lambda: heard == [(due.shard, NOW)])
    finally:
        await api.close()
        await worker.close()


@pytest.mark.postgres
async def test_the_listener_reconnects_when_its_connection_is_lost(pg_migrated_url: str) -> None:
    store = await open_store(pg_migrated_url)
    try:
        heard, listener = recorder()
        await store.listen_due(listener)
        await _terminate_listeners(pg_migrated_url)

        async def heard_again() -> None:
            while not heard:
                await store.add_reminders([reminder(due_at=NOW)])
                await asyncio.sleep(0.1)

        await asyncio.wait_for(heard_again(), 10)
    finally:
        await store.close()


async def _terminate_listeners(url: str) -> None:
    admin = await asyncpg.connect(url)
    try:
        killed = await admin.fetchval(
            """
            SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
            WHERE datname = current_database() AND query ILIKE 'LISTEN%'
            """
        )
        assert killed == 1
    finally:
        await admin.close()


@pytest.mark.postgres
async def test_a_channel_added_while_the_connection_is_busy_is_heard(pg_migrated_url: str) -> None:
    """LISTEN on a second channel meets a call still in flight on the connection (as the
    supervisor's ping can be): asyncpg refuses it, and the connection is made again with
    every channel, rather than left deaf to the new one."""
    wakeups = Wakeups(lambda: asyncpg.connect(pg_migrated_url))
    notifier = await asyncpg.connect(pg_migrated_url)
    try:
        await wakeups.add(lambda _shard, _due_at: None)
        connection = wakeups._connection
        assert connection is not None
        busy = asyncio.create_task(connection.execute("SELECT pg_sleep(1)"))
        await asyncio.sleep(0.2)  # the call is on the wire
        heard: list[None] = []
        await wakeups.add_leases(lambda: heard.append(None))

        async def heard_it() -> None:
            while not heard:
                await notifier.execute("SELECT pg_notify($1, 'w')", codec.LEASES_CHANNEL)
                await asyncio.sleep(0.1)

        await asyncio.wait_for(heard_it(), 15)
        await asyncio.gather(busy, return_exceptions=True)  # its connection was dropped
    finally:
        await notifier.close()
        await wakeups.close()


async def test_a_revocation_of_an_owners_tokens_is_told_to_listeners(store: Store) -> None:
    heard: list[str] = []
    stop = await store.listen_revocations(heard.append)

    await store.revoke_owner_tokens("ana", NOW)
    await store.revoke_owner_tokens("ana", NOW - timedelta(days=1))  # the line stays: told
    await eventually(lambda: len(heard) == 2)
    stop()
    await store.revoke_owner_tokens("bob", NOW)
    await settle()

    assert heard == ["ana", "ana"]
