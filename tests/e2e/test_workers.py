"""Worker processes on PostgreSQL: they share the parts, survive `kill -9` of one of them and
a database restart, stop gracefully, and refuse an old schema. The webhook peer is the local
receiver, a process of its own that counts delivery identities."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from tests.e2e.workers import (
    holders,
    latenesses,
    query,
    spread,
    until,
    wait_all_sent,
    workers,
)
from tests.integration.engine.support import eventually, receiver
from tocsin.clock import SystemClock
from tocsin.store import Store

pytestmark = [pytest.mark.postgres, pytest.mark.long]

clock = SystemClock()


@pytest.mark.slow
@pytest.mark.timeout(150)
async def test_two_workers_share_the_parts_and_one_killed_loses_nothing(
    pg_migrated_url: str, pg_store: Store, tmp_path: Path
) -> None:
    url = pg_migrated_url
    with receiver() as sink, workers(tmp_path) as started:
        a = started.start(url, "a", TOCSIN_WEBHOOK_URL=sink.url)
        started.start(url, "b", TOCSIN_WEBHOOK_URL=sink.url)

        async def shared() -> bool:
            return await holders(url) == {"a": 2, "b": 2}

        await eventually(shared, within=60, every=0.2)  # start-up, on a loaded machine
        saved = spread(160, 3, 20)
        await pg_store.add_reminders(saved)
        assert saved[0].due_at is not None
        await asyncio.sleep(until(saved[0].due_at + timedelta(seconds=7)))  # mid-way
        a.process.kill()  # kill -9: no lease given up, firings in flight left `sending`
        killed_at = clock.now()

        async def taken_over() -> bool:
            return await holders(url) == {"b": 4}

        await eventually(taken_over, within=10, every=0.1)
        took = (clock.now() - killed_at).total_seconds()
        await wait_all_sent(url, len(saved), within=40)
        stats = await sink.astats(ids=True)
    assert took <= 2 + 1.5, f"took {took:.1f} s to take the parts over"
    ids = {f"{one.id}.{int(one.due_at.timestamp())}" for one in saved if one.due_at}
    assert set(stats["arrivals"]) == ids, "every identity arrived, and nothing else"
    assert stats["unique"] == len(saved)
    late = await latenesses(url)
    assert late[0] >= 0
    assert late[len(late) // 2] < 1.0, "most rang within a second"
    assert late[-1] < 2 + 2 + 2 + 2, "the last (held by the killed worker) within the leases"


@pytest.mark.slow
@pytest.mark.timeout(150)
async def test_rings_claimed_by_a_killed_worker_before_it_recorded_them_are_sent_again(
    pg_migrated_url: str, pg_store: Store, tmp_path: Path
) -> None:
    """A claim writes no firing for a ring to send: the ring's record is its claim's row of
    `claimed_rings` until its sender writes the firing with its outcome. A sender killed
    between the two (its sends still out: the peer answers in 1.5 s) leaves rings whose
    firing nobody wrote; the other worker writes them `queued` once the hold ran out, and
    sends them under the same identity."""
    url = pg_migrated_url
    with receiver("--delay", "1.5") as sink, workers(tmp_path) as started:
        a = started.start(url, "a", TOCSIN_WEBHOOK_URL=sink.url)
        b = started.start(url, "b", TOCSIN_WEBHOOK_URL=sink.url)

        async def shared() -> bool:
            return await holders(url) == {"a": 2, "b": 2}

        await eventually(shared, within=60, every=0.2)
        saved = spread(120, 3, 4)  # 120 rings in two seconds: many out at once
        await pg_store.add_reminders(saved)
        assert saved[0].due_at is not None
        await asyncio.sleep(until(saved[0].due_at + timedelta(seconds=2)))
        unwritten = await query(
            url, "SELECT coalesce(sum(cardinality(reminder_ids)), 0) AS rings FROM claimed_rings"
        )
        a.process.kill()  # kill -9 mid-send: its rings' firings are not written
        await wait_all_sent(url, len(saved), within=60)
        stats = await sink.astats(ids=True)

        async def forgotten() -> bool:  # once their holds ran out
            return not await query(url, "SELECT 1 FROM claimed_rings")

        await eventually(forgotten, within=30, every=0.2)
        b_log = b.output()
    assert unwritten[0]["rings"] > 0, "rings were in flight under their claim when a was killed"
    ids = {f"{one.id}.{int(one.due_at.timestamp())}" for one in saved if one.due_at}
    assert set(stats["arrivals"]) == ids, "every identity arrived, and nothing else"
    assert "did not record them before its hold ran out" in b_log, "b sent a's rings again"


def _cluster_version() -> str:
    """The Debian cluster's major version (the newest under /etc/postgresql)."""
    return sorted(os.listdir("/etc/postgresql"), key=int)[-1]


@pytest.mark.slow
@pytest.mark.exclusive
@pytest.mark.timeout(180)
@pytest.mark.skipif(shutil.which("pg_ctlcluster") is None, reason="needs pg_ctlcluster")
async def test_postgres_restarted_while_firing_loses_nothing(
    pg_migrated_url: str, pg_store: Store, tmp_path: Path
) -> None:
    if ":5432/" not in pg_migrated_url:
        pytest.skip("the server under test is not the 5432 cluster")
    url = pg_migrated_url
    with receiver() as sink, workers(tmp_path) as started:
        started.start(url, "a", TOCSIN_WEBHOOK_URL=sink.url)
        started.start(url, "b", TOCSIN_WEBHOOK_URL=sink.url)
        saved = spread(100, 3, 25)
        await pg_store.add_reminders(saved)
        assert saved[0].due_at is not None
        await asyncio.sleep(until(saved[0].due_at + timedelta(seconds=6)))
        started_before = await _postmaster_started(url)
        restart = await asyncio.create_subprocess_exec(
            *("pg_ctlcluster", "--skip-systemctl-redirect", _cluster_version(), "main", "restart"),
            stderr=asyncio.subprocess.PIPE,
        )
        _, errors = await restart.communicate()
        assert restart.returncode == 0, errors.decode()
        await wait_all_sent(url, len(saved), within=60)
        started_after = await _postmaster_started(url)
        stats = await sink.astats()
        alive = [worker.process.poll() is None for worker in started.started]
        outputs = "".join(worker.output() for worker in started.started)
    assert stats["unique"] == len(saved), "every identity arrived"
    assert alive == [True, True], "the workers rode the restart out"
    assert started_after > started_before, "the server really restarted while firing"
    # Which worker call meets the restart depends on timing: a failed store call, or the
    # wake-up listener losing its connection and coming back.
    assert "failed" in outputs or "is back" in outputs, "the restart was felt"


async def _postmaster_started(url: str) -> datetime:
    started: datetime = (await query(url, "SELECT pg_postmaster_start_time() AS at"))[0]["at"]
    return started


async def test_a_stopped_worker_gives_its_parts_up(pg_migrated_url: str, tmp_path: Path) -> None:
    url = pg_migrated_url
    with workers(tmp_path) as started:
        worker = started.start(url, "a")

        async def holding() -> bool:
            return await holders(url) == {"a": 4}

        await eventually(holding, within=60, every=0.1)  # start-up, on a loaded machine
        status = worker.terminate()
        assert status == 0, worker.output()
        assert await holders(url) == {}
        assert "engine stopped" in worker.output()


@pytest.mark.slow
@pytest.mark.timeout(120)
async def test_a_stopping_worker_hands_its_parts_over_before_its_slow_sends_end(
    pg_migrated_url: str, pg_store: Store, tmp_path: Path
) -> None:
    """SIGTERM while sends are out to a peer that answers in 8 s: the parts are given up as
    soon as claiming stops, while the worker still finishes its sends (for up to one 10 s
    lease), not after."""
    url = pg_migrated_url
    slow = {"TOCSIN_LEASE_SECONDS": "10", "TOCSIN_WEBHOOK_TIMEOUT_SECONDS": "12"}
    with receiver("--delay", "8") as sink, workers(tmp_path) as started:
        worker = started.start(url, "a", TOCSIN_WEBHOOK_URL=sink.url, env=slow)

        async def holding() -> bool:
            return await holders(url) == {"a": 4}

        await eventually(holding, within=60, every=0.1)  # start-up, on a loaded machine
        saved = spread(10, 2, 2)
        await pg_store.add_reminders(saved)

        async def out() -> bool:
            total: int = (await sink.astats())["total"]
            return total == len(saved)

        await eventually(out, within=60, every=0.1)
        worker.process.send_signal(signal.SIGTERM)
        stopping = time.monotonic()

        async def given_up() -> bool:
            return await holders(url) == {}

        await eventually(given_up, within=20, every=0.1)
        gave_up_after = time.monotonic() - stopping
        still_sending = worker.process.poll() is None
        status = worker.process.wait(30)
        stats = await sink.astats()
    assert status == 0, worker.output()
    assert still_sending, "the parts went while the sends were still out"
    assert gave_up_after < 5, f"the parts went {gave_up_after:.1f} s after SIGTERM"
    assert stats["unique"] == len(saved), "the sends out at the stop were finished"


async def test_a_worker_refuses_an_old_schema(pg_url: str, tmp_path: Path) -> None:
    with workers(tmp_path) as started:
        worker = started.start(pg_url, "a")
        status = await asyncio.to_thread(worker.process.wait, 30)
    assert status == 1
    assert "tocsin migrate" in worker.output()


@pytest.mark.timeout(60)
async def test_a_worker_started_while_the_database_is_down_waits_for_it(tmp_path: Path) -> None:
    """A worker started during a database restart or failover waits, rather than exit (its
    supervisor would otherwise restart it in a loop)."""
    with workers(tmp_path) as started:
        waiting = started.start("postgresql://postgres@127.0.0.1:1/tocsin", "early")
        said = time.monotonic() + 30  # a busy machine may take seconds to start a process
        while "cannot reach the database yet" not in waiting.output():
            assert waiting.process.poll() is None, waiting.output()
            assert time.monotonic() < said, waiting.output()
            await asyncio.sleep(0.2)
        await asyncio.sleep(2)  # and it goes on waiting rather than exit
        alive = waiting.process.poll() is None
        output = waiting.output()
    assert alive, output
