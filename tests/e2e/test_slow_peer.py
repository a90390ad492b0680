"""A webhook peer that refuses connections, then answers slowly, beside two workers: an open
circuit breaker never makes a ring stale before its last try, and a send never outlives the
firing's hold, so no other worker sends it a second time."""

from __future__ import annotations

import asyncio
import socket
from datetime import timedelta
from pathlib import Path

import pytest

from tests.e2e.workers import firing_states, holders, query, spread, until, wait_all_sent, workers
from tests.integration.engine.support import eventually, receiver
from tocsin.store import Store

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.long]


def _free_port() -> int:
    """A loopback port nothing listens on (connections to it are refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def _two_workers_share(url: str) -> None:
    async def shared() -> bool:
        return await holders(url) == {"a": 2, "b": 2}

    await eventually(shared, within=60, every=0.2)  # start-up, on a loaded machine


@pytest.mark.timeout(180)
async def test_a_breaker_open_at_the_last_try_expires_nothing(
    pg_migrated_url: str, pg_store: Store, tmp_path: Path
) -> None:
    """Rings fresh for 60 s fall due over 15 s while the receiver refuses connections; it
    comes back 48 s after the first one's due time, while each worker's breaker is open for up
    to 15 s more and shortly before the first ring's last try (55 s after its due time; the
    gap leaves a loaded machine time to start the receiver). A refusal's wait is cut to the
    ring's last try, and the last try goes through the open breaker: every ring is sent, none
    expires."""
    url, port = pg_migrated_url, _free_port()
    webhook = f"http://127.0.0.1:{port}"
    with workers(tmp_path) as started:
        started.start(url, "a", TOCSIN_WEBHOOK_URL=webhook)
        started.start(url, "b", TOCSIN_WEBHOOK_URL=webhook)
        await _two_workers_share(url)
        saved = spread(80, 3, 18, freshness=60)
        await pg_store.add_reminders(saved)
        first = saved[0].due_at
        assert first is not None
        await asyncio.sleep(until(first + timedelta(seconds=48)))
        before = await firing_states(url)
        with receiver("--port", str(port)) as sink:
            await wait_all_sent(url, len(saved), within=60)
            stats = await sink.astats()
        held_back = await query(
            url, "SELECT count(*) AS n FROM attempts WHERE error LIKE 'circuit breaker open%'"
        )
    assert set(before) <= {"queued", "sending"}, f"none settled while refused: {before}"
    assert held_back[0]["n"] > 0, "the breakers opened"
    assert stats["unique"] == len(saved)
    assert stats["duplicates"] == 0


@pytest.mark.timeout(180)
async def test_a_slow_peer_beside_two_workers_gets_each_ring_once(
    pg_migrated_url: str, pg_store: Store, tmp_path: Path
) -> None:
    """Each answer takes 1.5 s and a worker has 2 connections: rings wait for one longer
    than their hold. A send that would outlive its hold is not made (the firing is taken
    again with a fresh one), so no worker takes over a firing whose send is still out."""
    url = pg_migrated_url
    with receiver("--delay", "1.5") as sink, workers(tmp_path) as started:
        started.start(url, "a", TOCSIN_WEBHOOK_URL=sink.url, TOCSIN_DELIVERY_CONCURRENCY="2")
        started.start(url, "b", TOCSIN_WEBHOOK_URL=sink.url, TOCSIN_DELIVERY_CONCURRENCY="2")
        await _two_workers_share(url)
        saved = spread(40, 3, 3)
        await pg_store.add_reminders(saved)
        await wait_all_sent(url, len(saved), within=120)
        stats = await sink.astats(ids=True)
    assert stats["unique"] == len(saved)
    twice = {key: seen for key, seen in stats["arrivals"].items() if len(seen) > 1}
    assert stats["duplicates"] == 0, f"sent again after a 2xx: {twice}"
