"""`tocsin serve` on SQLite deletes old rings and finished reminders by itself."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.integration.store.test_retention import _rung
from tests.support.processes import clean_env, running
from tocsin.domain import FiringState
from tocsin.store import open_store

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
