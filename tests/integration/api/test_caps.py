"""The cap on pending reminders per (owner, app): one more is a 409 naming the setting, a
batch saves what fits, another app or owner is not held back, and a cancelled reminder frees
its place."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from tests.integration.api.conftest import ANA, NOW, add_key, bearer, settings
from tocsin.api import create_app
from tocsin.clock import FakeClock
from tocsin.store import Store


@pytest.fixture
async def capped(store: Store) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(
        store=store,
        settings=settings().model_copy(update={"max_reminders_per_owner": 2}),
        clock=FakeClock(NOW),
    )
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        yield client


async def test_one_reminder_past_the_cap_is_a_409_and_a_cancel_makes_room(
    capped: httpx.AsyncClient, store: Store
) -> None:
    x, y = bearer(await add_key(store, "x")), bearer(await add_key(store, "y"))
    made = [await capped.post("/v1/reminders", json=ANA, headers=x) for _ in range(3)]
    other_app = await capped.post("/v1/reminders", json=ANA, headers=y)
    other_owner = await capped.post("/v1/reminders", json={**ANA, "owner": "bob"}, headers=x)
    cancelled = await capped.delete(f"/v1/reminders/{made[0].json()['id']}", headers=x)
    after_cancel = await capped.post("/v1/reminders", json=ANA, headers=x)

    assert [m.status_code for m in made] == [201, 201, 409]
    problem = made[2].json()
    assert made[2].headers["content-type"] == "application/problem+json"
    assert problem["type"].endswith("too-many-reminders")
    assert "TOCSIN_MAX_REMINDERS_PER_OWNER" in problem["detail"]
    assert (other_app.status_code, other_owner.status_code) == (201, 201)
    assert cancelled.status_code in (200, 204)
    assert after_cancel.status_code == 201
    assert len(await store.list_reminders("ana", source="x")) == 3  # 2 pending, 1 cancelled


async def test_a_batch_saves_what_fits_under_the_cap(
    capped: httpx.AsyncClient, store: Store
) -> None:
    x = bearer(await add_key(store, "x"))
    await capped.post("/v1/reminders", json=ANA, headers=x)
    items = [ANA, {**ANA, "owner": "bob"}, ANA, ANA]

    answer = await capped.post("/v1/reminders:batch", json={"items": items}, headers=x)

    body = answer.json()
    assert answer.status_code == 200, answer.text
    assert (body["created"], body["invalid"]) == (2, 2)
    assert [r["status"] for r in body["items"]] == ["created", "created", "invalid", "invalid"]
    assert body["items"][2]["problem"]["status"] == 409
    assert len(await store.list_reminders("ana")) == 2
