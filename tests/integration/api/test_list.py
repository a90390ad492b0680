"""GET /v1/reminders and GET /v1/reminders/{id}: keyset pages and single reads."""

from __future__ import annotations

from datetime import timedelta

import httpx

from tests.integration.api.conftest import ANA, ONE_OFF, create, fields
from tocsin.clock import FakeClock


async def test_pages_cover_every_reminder_once_in_creation_order(
    client: httpx.AsyncClient, clock: FakeClock
) -> None:
    made = []
    for i in range(7):
        made.append((await create(client, {**ANA, "text": f"#{i}"}))["id"])
        clock.advance(timedelta(milliseconds=5))
    await create(client, {**ANA, "owner": "bob"})

    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        params = {"owner": "ana", "limit": "3", **({"cursor": cursor} if cursor else {})}
        response = await client.get("/v1/reminders", params=params)
        assert response.status_code == 200
        page = response.json()
        seen += [r["id"] for r in page["reminders"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break

    assert seen == made
    assert pages == 3


async def test_a_page_that_ends_exactly_has_no_next_cursor(client: httpx.AsyncClient) -> None:
    for _ in range(2):
        await create(client, ANA)

    page = (await client.get("/v1/reminders", params={"owner": "ana", "limit": 2})).json()

    assert len(page["reminders"]) == 2
    assert page["next_cursor"] is None


async def test_filter_by_status(client: httpx.AsyncClient) -> None:
    kept = await create(client, ANA)
    gone = await create(client, ONE_OFF)
    assert (await client.delete(f"/v1/reminders/{gone['id']}")).status_code == 204

    pending = await client.get("/v1/reminders", params={"owner": "ana", "status": "pending"})
    cancelled = await client.get("/v1/reminders", params={"owner": "ana", "status": "cancelled"})

    assert [r["id"] for r in pending.json()["reminders"]] == [kept["id"]]
    assert [r["id"] for r in cancelled.json()["reminders"]] == [gone["id"]]


async def test_bad_list_parameters_are_named(client: httpx.AsyncClient) -> None:
    cases = {
        "owner": {},
        "limit": {"owner": "ana", "limit": "0"},
        "status": {"owner": "ana", "status": "sleeping"},
        "cursor": {"owner": "ana", "cursor": "!!!"},
    }
    for field, params in cases.items():
        response = await client.get("/v1/reminders", params=params)
        assert response.status_code == 422, field
        assert fields(response.json()) == [field]
    too_big = await client.get("/v1/reminders", params={"owner": "ana", "limit": "201"})
    bad_owner = await client.get("/v1/reminders", params={"owner": "a b"})
    assert fields(too_big.json()) == ["limit"]
    assert fields(bad_owner.json()) == ["owner"]


async def test_get_one(client: httpx.AsyncClient) -> None:
    made = await create(client, ANA)

    response = await client.get(f"/v1/reminders/{made['id']}")

    assert response.status_code == 200
    assert response.json() == made
    assert response.headers["etag"] == '"1"'


async def test_unknown_ids_are_404(client: httpx.AsyncClient) -> None:
    for path in ("/v1/reminders/0000000000000000", "/v1/reminders/nonsense"):
        response = await client.get(path)
        assert response.status_code == 404
        assert response.headers["content-type"] == "application/problem+json"
