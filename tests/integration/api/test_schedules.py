"""Occurrences (saved and previewed) and firings."""

from __future__ import annotations

from datetime import timedelta

import httpx

from tests.integration.api.conftest import ANA, ONE_OFF, create, fields
from tests.integration.api.test_changes import ring
from tocsin.clock import FakeClock
from tocsin.domain import FiringState
from tocsin.store import Store


async def test_occurrences_of_a_saved_series_across_the_dst_change(
    client: httpx.AsyncClient,
) -> None:
    made = await create(client, ANA)

    response = await client.get(f"/v1/reminders/{made['id']}/occurrences", params={"count": 3})

    assert response.status_code == 200
    assert response.json() == {
        "occurrences": [
            {"at": "2026-10-26T13:00:00Z", "local": "2026-10-26T09:00:00-04:00"},
            {"at": "2026-11-02T14:00:00Z", "local": "2026-11-02T09:00:00-05:00"},
            {"at": "2026-11-09T14:00:00Z", "local": "2026-11-09T09:00:00-05:00"},
        ]
    }


async def test_occurrences_default_to_ten_and_stop_at_a_hundred(
    client: httpx.AsyncClient,
) -> None:
    made = await create(client, ANA)
    path = f"/v1/reminders/{made['id']}/occurrences"

    assert len((await client.get(path)).json()["occurrences"]) == 10
    assert len((await client.get(path, params={"count": 100})).json()["occurrences"]) == 100
    for bad in ("0", "101", "many"):
        response = await client.get(path, params={"count": bad})
        assert response.status_code == 422
        assert fields(response.json()) == ["count"]


async def test_a_one_off_has_one_occurrence_until_it_rings(
    client: httpx.AsyncClient, store: Store, clock: FakeClock
) -> None:
    made = await create(client, ONE_OFF)
    path = f"/v1/reminders/{made['id']}/occurrences"

    before = (await client.get(path)).json()["occurrences"]
    await ring(store, clock, made["id"])
    after = (await client.get(path)).json()["occurrences"]

    assert before == [{"at": "2026-10-21T17:00:00Z", "local": "2026-10-21T18:00:00+01:00"}]
    assert after == []


async def test_preview_a_schedule_without_saving_it(
    client: httpx.AsyncClient, store: Store
) -> None:
    response = await client.post(
        "/v1/occurrences",
        json={"zone": "Europe/Lisbon", "repeat": "weekdays at 8:30", "count": 2},
    )

    assert response.status_code == 200
    assert response.json()["occurrences"] == [
        {"at": "2026-10-22T07:30:00Z", "local": "2026-10-22T08:30:00+01:00"},
        {"at": "2026-10-23T07:30:00Z", "local": "2026-10-23T08:30:00+01:00"},
    ]
    assert await store.list_reminders("ana") == []


async def test_bad_previews_name_their_field(client: httpx.AsyncClient) -> None:
    cases = [
        ({"zone": "Nowhere", "repeat": "daily 9:00"}, "zone"),
        ({"zone": "UTC", "repeat": "daily 9:00", "count": 101}, "count"),
        ({"zone": "UTC", "repeat": "sometimes"}, "repeat"),
        ({"zone": "UTC"}, "at"),
        ({"zone": "UTC", "repeat": "daily 9:00", "cout": 3}, "cout"),
    ]
    for body, field in cases:
        response = await client.post("/v1/occurrences", json=body)
        assert response.status_code == 422, body
        assert fields(response.json()) == [field], body


async def test_firings_with_their_state(
    client: httpx.AsyncClient, store: Store, clock: FakeClock
) -> None:
    made = await create(client, ANA)
    path = f"/v1/reminders/{made['id']}/firings"
    assert (await client.get(path)).json() == {"firings": []}

    firing = await ring(store, clock, made["id"], FiringState.SENDING)
    listed = (await client.get(path)).json()["firings"]
    if not firing.stored:
        # PostgreSQL writes a ring's firing with its first try's outcome: until then the
        # history has none, and the reminder shows the ring on its way as its last firing.
        assert listed == []
        reminder = (await client.get(f"/v1/reminders/{made['id']}")).json()
        assert reminder["last_firing"]["state"] == "sending"
        # Handed back unsent (written `queued`) and taken again: a firing row `sending`.
        await store.release_deliveries([firing], sender="test", now=clock.now())
        await store.take_deliveries(
            sender="test", shards=None, now=clock.now(), lease=timedelta(minutes=1), limit=10
        )
        listed = (await client.get(path)).json()["firings"]

    assert len(listed) == 1
    shown = listed[0]
    assert shown["id"] == firing.id
    assert shown["state"] == "sending"
    assert shown["due"] == "2026-10-26T13:00:00Z"
    assert shown["deadline"] == "2026-10-26T13:10:00Z"
    assert shown["attempts"] == 0
    assert shown["history"] == []
    reminder = (await client.get(f"/v1/reminders/{made['id']}")).json()
    assert reminder["last_firing"] == {
        "id": firing.id,
        "due": "2026-10-26T13:00:00Z",
        "state": "sending",
    }
