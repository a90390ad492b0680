"""`priority` through the API: urgent unless the reminder or its app key says bulk, kept by
edits, refused when it is neither."""

from __future__ import annotations

import httpx

from tests.integration.api.conftest import NOW, ONE_OFF, bearer, create, fields
from tocsin.auth import new_app
from tocsin.domain import Priority
from tocsin.store import Store


async def test_a_reminder_is_urgent_unless_it_says_bulk(client: httpx.AsyncClient) -> None:
    urgent = await create(client, ONE_OFF)
    bulk = await create(client, ONE_OFF | {"priority": "bulk"})

    assert urgent["priority"] == "urgent"
    assert bulk["priority"] == "bulk"
    shown = (await client.get(f"/v1/reminders/{bulk['id']}")).json()
    assert shown["priority"] == "bulk"


async def test_an_app_keys_priority_is_that_of_the_reminders_it_saves_without_one(
    client: httpx.AsyncClient, store: Store
) -> None:
    app, key = new_app("newsletter", webhook_url=None, now=NOW, priority=Priority.BULK)
    await store.add_app(app)

    plain = await create(client, ONE_OFF, headers=bearer(key))
    own = await create(client, ONE_OFF | {"priority": "urgent"}, headers=bearer(key))
    batch = await client.post(
        "/v1/reminders:batch", json={"items": [ONE_OFF, ONE_OFF]}, headers=bearer(key)
    )

    assert plain["priority"] == "bulk"
    assert own["priority"] == "urgent"
    assert batch.status_code == 200, batch.text
    for item in batch.json()["items"]:
        saved = await client.get(f"/v1/reminders/{item['id']}", headers=bearer(key))
        assert saved.json()["priority"] == "bulk"


async def test_an_edit_changes_the_priority_and_keeps_it_otherwise(
    client: httpx.AsyncClient,
) -> None:
    made = await create(client, ONE_OFF)
    path = f"/v1/reminders/{made['id']}"

    async def edit(body: dict[str, object]) -> httpx.Response:
        etag = (await client.get(path)).headers["ETag"]
        return await client.patch(path, json=body, headers={"If-Match": etag})

    bulk = await edit({"priority": "bulk"})
    renamed = await edit({"text": "Call mom back"})
    null = await edit({"priority": None})

    assert bulk.json()["priority"] == "bulk"
    assert renamed.json()["priority"] == "bulk"
    assert null.status_code == 422
    assert fields(null.json()) == ["priority"]


async def test_a_priority_that_is_neither_is_refused_naming_it(
    client: httpx.AsyncClient,
) -> None:
    response = await client.post("/v1/reminders", json=ONE_OFF | {"priority": "high"})

    assert response.status_code == 422
    assert response.headers["content-type"] == "application/problem+json"
    assert fields(response.json()) == ["priority"]
    assert "urgent" in response.json()["errors"][0]["message"]
