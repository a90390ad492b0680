"""Helpers of the engine tests: reminders, running an engine, waiting, the real receiver."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from tocsin.channels import Channels, build_channels
from tocsin.clock import Clock
from tocsin.domain import JSON, Channel, Contact, Firing, Reminder, ReminderStatus, Route, one
from tocsin.ids import new_reminder_id, shard_of
from tocsin.scheduler import Engine, EngineTuning, LoadTuning
from tocsin.settings import Settings
from tocsin.store import Store
from tocsin.time import first_due, parse_schedule

# A Monday, a little before 18:00 UTC.
T0 = datetime(2026, 3, 2, 17, 58, tzinfo=UTC)


def settings(**overrides: Any) -> Settings:
    """Settings for tests: few parts, short leases, a quick sweep. (The engine is given its
    store: the database URL is not used.)"""
    values: dict[str, Any] = {
        "database_url": "sqlite:///unused.db",
        "parts": 4,
        "lease_seconds": 2.0,
        "sweep_seconds": 0.5,
        "delivery_concurrency": 16,
        "webhook_timeout_seconds": 2.0,
        "allow_private_urls": True,  # the receiver peer listens on loopback
    }
    values.update(overrides)
    return Settings(**values)


TUNING = EngineTuning(load=LoadTuning(lead=timedelta(seconds=10)), retry_base_seconds=0.2)


def reminder(
    owner: str,
    *,
    now: datetime,
    at: datetime | None = None,
    repeat: str | None = None,
    channel: Channel | Route = Channel.LOG,
    freshness: int = 600,
    text: str = "Call mom",
    source: str | None = None,
    metadata: JSON | None = None,
) -> Reminder:
    """A pending reminder as the API would save it: a one-off `at` an instant, or a series."""
    at_text = at.strftime("%Y-%m-%dT%H:%M:%SZ") if at is not None else None
    schedule = parse_schedule(zone="Europe/Paris", at=at_text, repeat=repeat, now=now)
    due = first_due(schedule, now)
    assert due is not None
    shard = shard_of(owner)
    return Reminder(
        id=new_reminder_id(shard, now),
        owner=owner,
        shard=shard,
        text=text,
        channel=channel if isinstance(channel, Route) else one(channel),
        schedule=schedule,
        at=at_text,
        repeat=repeat,
        status=ReminderStatus.PENDING,
        due_at=due,
        freshness=freshness,
        metadata=metadata,
        source=source,
        snoozed_from=None,
        version=1,
        created_at=now,
        updated_at=now,
    )


async def add_contact(
    store: Store,
    owner: str,
    kind: Channel,
    address: dict[str, str],
    *,
    now: datetime,
    secret: str | None = None,
) -> str:
    """Save an enabled contact of `owner`'s, the owner's own (no app's); return its id."""
    shard = shard_of(owner)
    contact_id = new_reminder_id(shard, now)
    await store.add_contact(
        Contact(
            id=contact_id,
            owner=owner,
            shard=shard,
            kind=kind,
            address=address,
            label=None,
            secret=secret,
            disabled_reason=None,
            disabled_at=None,
            created_at=now,
            updated_at=now,
        )
    )
    return contact_id


@asynccontextmanager
async def running(
    store: Store,
    config: Settings,
    clock: Clock,
    *,
    worker_id: str = "worker-1",
    channels: Channels | None = None,
    tuning: EngineTuning = TUNING,
    **kwargs: Any,
) -> AsyncIterator[Engine]:
    """An engine running on `store` until the block ends (then stopped gracefully)."""
    engine = Engine(
        store,
        config,
        clock,
        worker_id=worker_id,
        channels=channels or build_channels(config, clock, announce=store.announce_feed),
        tuning=tuning,
        **kwargs,
    )
    await engine.start()
    try:
        yield engine
    finally:
        await engine.stop()


async def eventually(
    check: Callable[[], Awaitable[bool]], *, within: float = 10.0, every: float = 0.02
) -> None:
    """Wait (in real time) until `check` holds; fail after `within` seconds."""
    give_up = time.monotonic() + within
    while not await check():
        if time.monotonic() > give_up:
            raise AssertionError(f"still not true after {within} s")
        await asyncio.sleep(every)


async def firings_of(store: Store, reminder_id: str) -> list[Firing]:
    """The reminder's firings, oldest due first."""
    return list(reversed(await store.list_firings(reminder_id)))


async def settled(store: Store, reminder_ids: list[str], count: int = 1) -> None:
    """Wait until each reminder has `count` firings in a final state."""

    async def done() -> bool:
        for reminder_id in reminder_ids:
            firings = await store.list_firings(reminder_id)
            if len(firings) < count or not all(f.state.is_final for f in firings):
                return False
        return True

    await eventually(done)


@dataclass(frozen=True)
class Receiver:
    """The local webhook receiver, a process of its own."""

    url: str
    process: subprocess.Popen[str]

    def stats(self, *, ids: bool = False, bodies: bool = False) -> dict[str, Any]:
        query = "&".join(name for name, wanted in (("ids", ids), ("bodies", bodies)) if wanted)
        response = httpx.get(f"{self.url}/stats?{query}", timeout=5)
        response.raise_for_status()
        result: dict[str, Any] = response.json()
        return result

    async def astats(self, **kwargs: bool) -> dict[str, Any]:
        return await asyncio.to_thread(self.stats, **kwargs)


@contextmanager
def receiver(*args: str) -> Iterator[Receiver]:
    """Start `python -m tocsin_bench.receiver` with `args` on a free port."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tocsin_bench.receiver", "--port", "0", *args],
        stdout=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("listening on "), line
        yield Receiver(url=line.removeprefix("listening on ").strip(), process=process)
    finally:
        process.terminate()
        process.wait(10)
        if process.stdout is not None:
            process.stdout.close()


def at_second(instant: datetime, delta: float) -> datetime:
    return instant + timedelta(seconds=delta)
