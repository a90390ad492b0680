"""Retention through the running service: `tocsin serve` on SQLite deletes old rings and
finished reminders by itself; on PostgreSQL exactly one of two `tocsin worker`s (the holder of
the retention chore) deletes them, beside a `tocsin api`, and when it dies the other takes
over."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from tests.e2e.workers import Worker, query, workers
from tests.integration.engine.support import eventually
from tests.integration.store.factories import claim, reminder, result
from tests.integration.store.test_retention import _rung
from tests.support.processes import clean_env, running
from tocsin.domain import Firing, FiringState, Outcome, Reminder
from tocsin.store import Store, open_store

pytestmark = pytest.mark.slow


async def test_serve_deletes_what_is_older_than_the_retention(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'tocsin.db'}"
    now = datetime.now(UTC)
    store = await open_store(url)
    try:
        await store.migrate()
        old = [await _rung(store, now - timedelta(days=d), state=FiringState.SENT) for d in (9, 8)]
        young = await _rung(store, now - timedelta(days=6), state=FiringState.SENT)
    finally:
        await store.close()

    with running("serve", "--db", url, env=clean_env(TOCSIN_RETAIN_FIRINGS="7d")):
        deadline = time.monotonic() + 30
        store = await open_store(url)
        try:
            while time.monotonic() < deadline:
                if all([await store.get_reminder(r.id) is None for r, _ in old]):
                    break
                await asyncio.sleep(0.2)
            assert [await store.get_reminder(r.id) for r, _ in old] == [None, None]
            assert [f.id for f in await store.list_firings(young[0].id)] == [young[1].id]
        finally:
            await store.close()


# Two workers on PostgreSQL share one retention chore. A short chore lease (passes every
# 2 s) so that the standby takes over within 6 s of the holder's crash; the holder renews
# 2 s before its lease runs out, room enough for a busy machine.
WORKER_SETTINGS = {
    "TOCSIN_RETENTION_LEASE_SECONDS": "4",
    "TOCSIN_RETAIN_FIRINGS": "1d",
    "TOCSIN_LOG_FORMAT": "json",  # `_deleted_by` reads what each worker deleted
}
DELETED = "retention deleted old rows"
KINDS = ("firings", "attempts", "reminders", "idempotency_keys")


async def _old_rows(url: str, now: datetime) -> list[str]:
    """Rows retention must delete: two old final rings (sent, failed) and their reminders, and
    an old cancelled reminder; their reminders' ids. 3 reminders, 2 firings, 2 attempts."""
    store = await open_store(url)
    try:
        rungs = [
            await _rung(store, now - timedelta(days=3), state=FiringState.SENT),
            await _rung(store, now - timedelta(days=2), state=FiringState.FAILED),
        ]
        cancelled = reminder(due_at=now + timedelta(days=1), created_at=now - timedelta(days=4))
        await store.add_reminders([cancelled])
        await store.cancel_reminder(cancelled.id, now=now - timedelta(days=3))
    finally:
        await store.close()
    return [one.id for one, _ in rungs] + [cancelled.id]


async def _kept_rows(url: str, now: datetime) -> dict[str, str]:
    """Rows retention must keep, by what they are: a recent ring, two old rings still being
    delivered (a retry due tomorrow; a send whose sender holds it), an old pending reminder."""
    store = await open_store(url)
    try:
        recent, _ = await _rung(store, now - timedelta(hours=6), state=FiringState.SENT)
        retrying, tried = await _in_flight(store, now - timedelta(days=2))
        retry_tomorrow = result(
            tried,
            state=FiringState.QUEUED,
            outcome=Outcome.RETRY,
            at=tried.due_at,
            next_attempt_at=now + timedelta(days=1),
        )
        await store.record_attempts([retry_tomorrow])
        sending, _ = await _in_flight(store, now - timedelta(days=2, hours=1))
        pending = reminder(due_at=now + timedelta(days=1), created_at=now - timedelta(days=5))
        await store.add_reminders([pending])
    finally:
        await store.close()
    return {
        "recent": recent.id,
        "retrying": retrying.id,
        "sending": sending.id,
        "pending": pending.id,
    }


async def _in_flight(store: Store, due: datetime) -> tuple[Reminder, Firing]:
    """A one-off due at `due` (freshness 3 days: still deliverable), claimed then, and its
    firing held `sending` by a sender for 3 days: not final, whatever its age. Its first
    sender's hold ran out unrecorded (PostgreSQL: `recover_claims` writes the firing
    `queued`; SQLite wrote it `sending` at the claim), and another took it."""
    one_off = reminder(due_at=due, created_at=due - timedelta(days=1), freshness=3 * 86_400)
    await store.add_reminders([one_off])
    await store.claim([claim(one_off)], sender="gone", now=due, lease=timedelta(seconds=1))
    later = due + timedelta(seconds=2)
    await store.recover_claims(now=later, limit=100)
    taken = await store.take_deliveries(
        sender="worker-1", shards=None, now=later, lease=timedelta(days=3), limit=100
    )
    [firing] = [one for one in taken if one.reminder_id == one_off.id]
    return one_off, firing


def _deleted_by(worker: Worker) -> dict[str, int]:
    """What `worker` says its retention deleted, summed over its passes."""
    total = dict.fromkeys(KINDS, 0)
    for line in worker.output().splitlines():
        if line.startswith("{") and (entry := json.loads(line))["message"] == DELETED:
            for kind in KINDS:
                total[kind] += entry[kind]
    return total


async def _chore_holder(url: str) -> str | None:
    rows = await query(
        url, "SELECT holder FROM chores WHERE name = 'retention' AND expires_at > now()"
    )
    return rows[0]["holder"] if rows else None


async def _all_gone(client: httpx.AsyncClient, ids: list[str], within: float) -> None:
    async def gone() -> bool:
        answers = [await client.get(f"/v1/reminders/{one}") for one in ids]
        return all(answer.status_code == 404 for answer in answers)

    await eventually(gone, within=within, every=0.2)


async def _created_with_key(client: httpx.AsyncClient, key: str) -> str:
    """A pending reminder due tomorrow, created with `Idempotency-Key: key`; its id."""
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    body = {"owner": "ana", "text": "Tomorrow", "zone": "Europe/Paris", "channel": "log"}
    answer = await client.post(
        "/v1/reminders", json=body | {"at": tomorrow}, headers={"Idempotency-Key": key}
    )
    assert answer.status_code == 201, answer.text
    made: str = answer.json()["id"]
    return made


@pytest.mark.postgres
@pytest.mark.timeout(90)
async def test_one_of_two_workers_deletes_and_the_other_takes_over_when_it_dies(
    pg_migrated_url: str, tmp_path: Path
) -> None:
    url = pg_migrated_url
    now = datetime.now(UTC)
    with (
        running("api", "--db", url, env=clean_env(), log=tmp_path / "api.log") as (base, _),
        workers(tmp_path) as started,
    ):
        async with httpx.AsyncClient(base_url=base, timeout=10) as client:
            keyed = [await _created_with_key(client, key) for key in ("old-key", "new-key")]
            await query(
                url,
                "UPDATE idempotency_keys SET created_at = now() - interval '25 hours' "
                "WHERE key = 'old-key'",
            )
            kept = await _kept_rows(url, now)
            first_old = await _old_rows(url, now)
            pair = [started.start(url, name, env=WORKER_SETTINGS) for name in ("w1", "w2")]

            await _all_gone(client, first_old, within=30)
            holder = await _chore_holder(url)
            [dead] = [worker for worker in pair if worker.name == holder]
            [standby] = [worker for worker in pair if worker is not dead]
            expected = {"firings": 2, "attempts": 2, "reminders": 3, "idempotency_keys": 1}
            assert _deleted_by(dead) == expected
            assert _deleted_by(standby) == dict.fromkeys(KINDS, 0)

            dead.process.kill()  # no release: the standby waits for the lease to run out
            dead.process.wait(10)
            # Written with the standby stopped: the old rings' claims, made days ago, are
            # ones its recovery would take over (their hold ran out) between this test's
            # claim and its record of the first try, which then lands elsewhere.
            standby.process.send_signal(signal.SIGSTOP)
            try:
                second_old = await _old_rows(url, now)
            finally:
                standby.process.send_signal(signal.SIGCONT)
            await _all_gone(client, second_old, within=30)

            assert await _chore_holder(url) == standby.name
            assert _deleted_by(standby) == expected | {"idempotency_keys": 0}
            for name, one in kept.items():
                answer = await client.get(f"/v1/reminders/{one}")
                assert answer.status_code == 200, name
            for name in ("recent", "retrying", "sending"):
                rings = await client.get(f"/v1/reminders/{kept[name]}/firings")
                assert len(rings.json()["firings"]) == 1, name
            for one in keyed:
                assert (await client.get(f"/v1/reminders/{one}")).json()["status"] == "pending"
            keys = await query(url, "SELECT key FROM idempotency_keys ORDER BY key")
            assert [row["key"] for row in keys] == ["new-key"]
