"""Changes racing a ring, through the real API beside a running engine: a reminder created
seconds before it is due, an edit, a cancel that won and one that lost."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest

from tests.integration.engine.support import T0, eventually, firings_of, running, settings
from tocsin.api import create_app
from tocsin.clock import Clock, FakeClock, SystemClock
from tocsin.domain import FiringState, ReminderStatus
from tocsin.store import Store

DUE = T0.replace(hour=18, minute=0)  # 18:00:00Z
# A ring the wake-up brought in, late only by a loaded machine; found by the sweep, it
# would be a minute late.
ON_TIME_SECONDS = 10


def z(instant: datetime) -> str:
    return instant.strftime("%Y-%m-%dT%H:%M:%SZ")


def body(at: datetime, owner: str = "ana") -> dict[str, Any]:
    return {"owner": owner, "text": "Call mom", "at": z(at), "zone": "Europe/Paris",
            "channel": "log"}  # fmt: skip


@pytest.fixture
async def api_for(store: Store) -> AsyncIterator[Any]:
    """An API client factory over `store` with a given clock."""
    clients: list[httpx.AsyncClient] = []

    def make(clock: Clock) -> httpx.AsyncClient:
        app = create_app(store=store, settings=settings(), clock=clock)
        client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1"
        )
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.aclose()


async def sent(store: Store, reminder_id: str) -> bool:
    firings = await firings_of(store, reminder_id)
    return bool(firings) and firings[-1].state is FiringState.SENT


async def test_created_three_seconds_before_due_rings_on_time(store: Store, api_for: Any) -> None:
    # A sweep too slow to help (the next one is a minute on): only the wake-up can make it
    # ring within seconds.
    clock = SystemClock()
    api = api_for(clock)
    async with running(store, settings(sweep_seconds=60), clock):
        await asyncio.sleep(0.3)  # the engine has read its buckets ahead
        due = clock.now().replace(microsecond=0) + timedelta(seconds=3)
        response = await api.post("/v1/reminders", json=body(due))
        assert response.status_code == 201, response.text
        made = response.json()
        # Within milliseconds here; beside four CPU hogs and the parallel test run (this
        # process runs the engine, the API and the checks) not recorded 5 s after its due.
        await eventually(lambda: sent(store, made["id"]), within=30)
    (firing,) = await firings_of(store, made["id"])
    assert firing.due_at == due
    assert firing.sent_at is not None
    assert timedelta(0) <= firing.sent_at - due < timedelta(seconds=ON_TIME_SECONDS)


async def test_an_edit_from_18_00_to_18_30_rings_at_18_30_only(store: Store, api_for: Any) -> None:
    clock = FakeClock(T0)
    api = api_for(clock)
    made = (await api.post("/v1/reminders", json=body(DUE))).json()
    async with running(store, settings(), clock):
        clock.set(DUE - timedelta(seconds=5))  # 18:00 is loaded in memory by now
        await asyncio.sleep(0.2)
        shown = await api.get(f"/v1/reminders/{made['id']}")
        edit = await api.patch(
            f"/v1/reminders/{made['id']}",
            json={"at": z(DUE + timedelta(minutes=30))},
            headers={"If-Match": shown.headers["etag"]},
        )
        assert edit.status_code == 200, edit.text
        clock.set(DUE)
        await asyncio.sleep(0.3)
        assert await firings_of(store, made["id"]) == [], "rang at 18:00"
        clock.set(DUE + timedelta(minutes=30))
        await eventually(lambda: sent(store, made["id"]))
    (firing,) = await firings_of(store, made["id"])
    assert firing.due_at == DUE + timedelta(minutes=30)
    assert firing.sent_at == DUE + timedelta(minutes=30)


async def test_a_cancel_that_won_never_rings(store: Store, api_for: Any) -> None:
    clock = FakeClock(T0)
    api = api_for(clock)
    made = (await api.post("/v1/reminders", json=body(DUE))).json()
    async with running(store, settings(), clock):
        clock.set(DUE - timedelta(seconds=2))
        await asyncio.sleep(0.2)
        cancelled = await api.delete(f"/v1/reminders/{made['id']}")
        assert cancelled.status_code == 204
        for second in range(3):
            clock.set(DUE + timedelta(seconds=second))
            await asyncio.sleep(0.15)
    assert await firings_of(store, made["id"]) == []
    row = await store.get_reminder(made["id"])
    assert row is not None
    assert row.status is ReminderStatus.CANCELLED


async def test_a_cancel_that_lost_rang(store: Store, api_for: Any) -> None:
    clock = FakeClock(T0)
    api = api_for(clock)
    made = (await api.post("/v1/reminders", json=body(DUE))).json()
    async with running(store, settings(), clock):
        clock.set(DUE)

        async def claimed() -> bool:
            return bool(await firings_of(store, made["id"]))

        await eventually(claimed)
        cancelled = await api.delete(f"/v1/reminders/{made['id']}")
        assert cancelled.status_code == 409, cancelled.text
        await eventually(lambda: sent(store, made["id"]))
    (firing,) = await firings_of(store, made["id"])
    assert firing.sent_at == DUE
