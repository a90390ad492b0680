"""POST /v1/reminders:batch: each item created or refused on its own, in one transaction."""

from __future__ import annotations

import httpx

from tests.integration.api.conftest import ANA, ONE_OFF, fields
from tocsin.store import Store


async def test_valid_items_are_saved_and_invalid_ones_say_why(
    client: httpx.AsyncClient, store: Store
) -> None:
    items = [ANA, {**ANA, "zone": "Nowhere/Land"}, ONE_OFF, "not an object", {**ANA, "repat": 1}]
    response = await client.post("/v1/reminders:batch", json={"items": items})

    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["created"], body["invalid"]) == (2, 3)
    results = body["items"]
    assert [r["index"] for r in results] == [0, 1, 2, 3, 4]
    assert [r["status"] for r in results] == ["created", "invalid", "created", "invalid", "invalid"]
    assert results[0]["next"] == "2026-10-26T13:00:00Z"
    assert results[2]["next"] == "2026-10-21T17:00:00Z"  # 18:00 in Lisbon (WEST)
    assert set(results[0]) == {"index", "status", "id", "next", "etag"}
    assert results[0]["etag"] == '"1"'  # as saved: an edit may name it without a read
    assert fields(results[1]["problem"]) == ["items.1.zone"]
    assert results[1]["problem"]["status"] == 422
    assert fields(results[3]["problem"]) == ["items.3"]
    assert fields(results[4]["problem"]) == ["items.4.repat"]
    saved = await store.list_reminders("ana")
    assert {r.id for r in saved} == {results[0]["id"], results[2]["id"]}


async def test_a_batch_retry_replays_the_answer(client: httpx.AsyncClient, store: Store) -> None:
    headers = {"Idempotency-Key": "import-1"}
    body = {"items": [ANA, ONE_OFF]}
    first = await client.post("/v1/reminders:batch", json=body, headers=headers)
    again = await client.post("/v1/reminders:batch", json=body, headers=headers)
    other = await client.post("/v1/reminders:batch", json={"items": [ANA]}, headers=headers)

    assert first.status_code == again.status_code == 200
    assert again.content == first.content
    assert other.status_code == 422
    assert len(await store.list_reminders("ana")) == 2


async def test_batch_limits(client: httpx.AsyncClient) -> None:
    empty = await client.post("/v1/reminders:batch", json={"items": []})
    missing = await client.post("/v1/reminders:batch", json={})
    too_many = await client.post("/v1/reminders:batch", json={"items": [{}] * 1001})

    assert empty.status_code == missing.status_code == too_many.status_code == 422
    assert fields(empty.json()) == ["items"]
    assert fields(missing.json()) == ["items"]
    assert fields(too_many.json()) == ["items"]


async def test_a_thousand_items_in_one_call(client: httpx.AsyncClient, store: Store) -> None:
    items = [{**ANA, "owner": f"user-{i}", "text": f"#{i}"} for i in range(1000)]
    response = await client.post("/v1/reminders:batch", json={"items": items})

    assert response.status_code == 200
    assert response.json()["created"] == 1000
    assert len(await store.list_reminders("user-999")) == 1


async def test_the_batch_path_is_not_taken_for_an_id(client: httpx.AsyncClient) -> None:
    response = await client.get("/v1/reminders:batch")

    assert response.status_code == 405
    assert response.headers["content-type"] == "application/problem+json"


async def test_a_batch_over_2_mib_is_a_413(client: httpx.AsyncClient) -> None:
    item = {**ANA, "metadata": {"blob": "x" * 4000}}
    response = await client.post("/v1/reminders:batch", json={"items": [item] * 600})

    assert response.status_code == 413
