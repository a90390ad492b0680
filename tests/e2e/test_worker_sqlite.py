"""`tocsin worker` on SQLite with the log channel: the ring is one line in its output."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

from tests.e2e.workers import workers
from tests.integration.engine.support import eventually, firings_of, reminder
from tocsin.clock import SystemClock
from tocsin.domain import FiringState
from tocsin.store import open_store


async def test_a_worker_on_sqlite_logs_the_ring(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'tocsin.db'}"
    store = await open_store(url)
    try:
        await store.migrate()
        now = SystemClock().now().replace(microsecond=0)
        one = reminder("ana", now=now, at=now + timedelta(seconds=2), text="Water the plants")
        await store.add_reminders([one])
        with workers(tmp_path) as started:
            worker = started.start(url, "solo")

            async def rang() -> bool:
                return f"reminder_id={one.id}" in worker.output()

            await eventually(rang, within=15, every=0.1)
            assert await asyncio.to_thread(worker.terminate) == 0
        (firing,) = await firings_of(store, one.id)
    finally:
        await store.close()
    assert firing.state is FiringState.SENT
    (line,) = [line for line in worker.output().splitlines() if "tocsin.ring" in line]
    assert "ring: Water the plants" in line
    assert "owner=ana" in line
    assert "lateness_seconds=" in line
