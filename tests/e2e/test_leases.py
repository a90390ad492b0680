"""Leases under faults, with real `tocsin worker` processes on PostgreSQL: workers whose clocks
are 30 s off, a worker paused (SIGSTOP) past its lease and resumed, and workers joining and
leaving while rings are due every tenth of a second. Delivery times are read at the local
webhook receiver, on the test's own clock, from each firing id's due second."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.workers import (
    clock,
    holders,
    query,
    spread,
    until,
    wait_all_sent,
    workers,
    wrong_clock,
)
from tests.integration.engine.support import eventually, receiver
from tocsin.store import open_store

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.long]

# How long after the last ring's due time a paused worker is resumed: more than any ring
# that was taken over can be late, however loaded the machine.
RESUME_AFTER_LAST = 20.0


def arrival_lateness(stats: dict[str, Any]) -> dict[str, float]:
    """Per identity, the first arrival at the receiver less its due second (from the id)."""
    late: dict[str, float] = {}
    for identity, arrivals in stats["arrivals"].items():
        due = int(identity.rpartition(".")[2])
        late[identity] = min(at for at, _status in arrivals) - due
    return late


async def save(url: str, count: int, first: float, last: float) -> list[str]:
    """`count` webhook reminders due from `first` to `last` seconds on; their identities."""
    saved = spread(count, first, last)
    store = await open_store(url)
    try:
        await store.add_reminders(saved)
    finally:
        await store.close()
    return [f"{one.id}.{int(one.due_at.timestamp())}" for one in saved if one.due_at]


async def watch(url: str, every: float, stop: asyncio.Event) -> list[dict[str, int]]:
    """Who holds how many parts, every `every` seconds until `stop`."""
    seen: list[dict[str, int]] = []
    while not stop.is_set():
        seen.append(await holders(url))
        await asyncio.sleep(every)
    return seen


def arrived(url: str, worker: str) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return bool(await query(url, "SELECT 1 FROM workers WHERE worker = $1", worker))

    return check


def holding(url: str, expected: dict[str, int]) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return await holders(url) == expected

    return check


@pytest.mark.timeout(120)
async def test_workers_with_clocks_30_s_off_keep_their_leases_and_ring_on_time(
    pg_migrated_url: str, tmp_path: Path
) -> None:
    url = pg_migrated_url
    with receiver() as sink, workers(tmp_path) as started:
        for name, offset in (("ahead", "+30s"), ("behind", "-30s")):
            started.start(url, name, env=wrong_clock(offset), TOCSIN_WEBHOOK_URL=sink.url)
        await eventually(holding(url, {"ahead": 2, "behind": 2}), within=30, every=0.2)
        identities = await save(url, 40, 4, 14)
        stop = asyncio.Event()
        watcher = asyncio.create_task(watch(url, 0.25, stop))
        await wait_all_sent(url, len(identities), within=40)
        stop.set()
        seen = await watcher
        stats = await sink.astats(ids=True)
        logs = "".join(worker.output() for worker in started.started)

    assert all(shares == {"ahead": 2, "behind": 2} for shares in seen), seen
    assert set(stats["arrivals"]) == set(identities)
    late = arrival_lateness(stats)
    assert min(late.values()) >= -0.3, "nothing rang early"
    assert max(late.values()) < 1.5, "everything rang within a second and a half"
    # Signed by the database's clock (the test's), not the worker's 30 s off: within a
    # second of rounding, and slack for a busy machine.
    assert stats["timestamp_skew"] < 5, stats["timestamp_skew"]
    assert "ahead of the database's" in logs
    assert "behind the database's" in logs


@pytest.mark.timeout(180)
async def test_a_worker_paused_past_its_lease_changes_nothing_when_it_resumes(
    pg_migrated_url: str, tmp_path: Path
) -> None:
    url = pg_migrated_url
    with receiver() as sink, workers(tmp_path) as started:
        paused = started.start(url, "paused", TOCSIN_WEBHOOK_URL=sink.url)
        started.start(url, "steady", TOCSIN_WEBHOOK_URL=sink.url)
        await eventually(holding(url, {"paused": 2, "steady": 2}), within=30, every=0.2)
        identities = await save(url, 80, 3, 20)
        last_due = clock.now() + timedelta(seconds=20)
        await asyncio.sleep(5)
        paused.process.send_signal(signal.SIGSTOP)  # leases are 2 s: it sleeps through them
        # ~2 s here (a lease); beside four CPU hogs and the parallel test run, more than 5 s.
        await eventually(holding(url, {"steady": 4}), within=30, every=0.1)
        # Paused until well after the last ring's due time: a ring that waited for the
        # paused worker (due before the takeover, or claimed by it and not sent) arrives
        # after the resume, RESUME_AFTER_LAST or more late; taken over, it comes before.
        await asyncio.sleep(max(8.0, until(last_due + timedelta(seconds=RESUME_AFTER_LAST))))
        paused.process.send_signal(signal.SIGCONT)
        await eventually(holding(url, {"paused": 2, "steady": 2}), within=30, every=0.2)
        await wait_all_sent(url, len(identities), within=40)
        stats = await sink.astats(ids=True)

    assert set(stats["arrivals"]) == set(identities), "every identity arrived, and nothing else"
    late = arrival_lateness(stats)
    # Only rings of the paused worker's parts wait: those due before the takeover, for it
    # (a lease and a renewal), and those it had claimed and not sent, for their hold (the
    # lease and the webhook timeout, 4 s) and the next pickup (1 s) — never the pause.
    # (At most 1-2 s here; the bound is what waiting for the resume would exceed.)
    assert max(late.values()) < RESUME_AFTER_LAST, "a ring waited for the paused worker"


@pytest.mark.timeout(120)
async def test_parts_change_hands_without_a_gap_when_workers_join_and_leave(
    pg_migrated_url: str, tmp_path: Path
) -> None:
    url = pg_migrated_url
    long_leases = "10"  # seconds: a renewal period (5 s) would show as a gap
    with receiver() as sink, workers(tmp_path) as started:
        first = started.start(
            url, "first", TOCSIN_WEBHOOK_URL=sink.url, TOCSIN_LEASE_SECONDS=long_leases
        )
        await eventually(holding(url, {"first": 4}), within=30, every=0.2)
        identities = await save(url, 120, 3, 15)
        await asyncio.sleep(5)
        started.start(url, "joined", TOCSIN_WEBHOOK_URL=sink.url, TOCSIN_LEASE_SECONDS=long_leases)
        # From its arrival (its first heartbeat), not its start: a process starting on a
        # machine loaded by the parallel test run took 8 s to import.
        await eventually(arrived(url, "joined"), within=60, every=0.05)
        joined_at = clock.now()
        await eventually(holding(url, {"first": 2, "joined": 2}), within=8, every=0.05)
        join_took = (clock.now() - joined_at).total_seconds()
        await asyncio.sleep(3)
        first.process.send_signal(signal.SIGTERM)
        left_at = clock.now()
        await eventually(holding(url, {"joined": 4}), within=8, every=0.05)
        leave_took = (clock.now() - left_at).total_seconds()
        await wait_all_sent(url, len(identities), within=40)
        stats = await sink.astats(ids=True)
        assert first.process.wait(15) == 0

    assert set(stats["arrivals"]) == set(identities)
    late = arrival_lateness(stats)
    assert max(late.values()) < 1.0, "no ring waited for a renewal period"
    # The joiner's arrival reaches the holder at once (it renews on the notice), not a renewal
    # period (5 s) later; a graceful leave hands over as fast.
    assert join_took < 4.0, f"took {join_took:.1f} s to share the parts"
    assert leave_took < 1.0, f"took {leave_took:.1f} s to take the parts over"


async def test_a_crashed_workers_parts_are_taken_when_its_lease_runs_out(
    pg_migrated_url: str, tmp_path: Path
) -> None:
    url = pg_migrated_url
    lease = 4.0
    with workers(tmp_path) as started:
        crashed = started.start(url, "crashed", TOCSIN_LEASE_SECONDS=str(lease))
        started.start(url, "survivor", TOCSIN_LEASE_SECONDS=str(lease))
        await eventually(holding(url, {"crashed": 2, "survivor": 2}), within=30, every=0.1)
        crashed.process.kill()
        killed_at = clock.now()
        await eventually(holding(url, {"survivor": 4}), within=2 * lease, every=0.05)
        took = (clock.now() - killed_at).total_seconds()

    # The crashed worker renewed at most lease/2 before it died; the survivor renews just
    # after that lease runs out (by the database's clock), not up to a renewal period later.
    assert took <= lease + 0.5, f"took {took:.1f} s"
