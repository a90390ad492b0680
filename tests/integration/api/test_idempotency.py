"""Idempotency-Key: a retry gets the first answer; the same key with another body is a 422."""

from __future__ import annotations

import asyncio

import httpx

from tests.integration.api.conftest import ANA, ONE_OFF, add_key, bearer, fields
from tocsin.store import Store


async def test_a_retry_gets_the_first_answer_and_saves_nothing_more(
    client: httpx.AsyncClient, store: Store
) -> None:
    headers = {"Idempotency-Key": "retry-1"}
    first = await client.post("/v1/reminders", json=ANA, headers=headers)
    again = await client.post("/v1/reminders", json=dict(reversed(ANA.items())), headers=headers)

    assert first.status_code == again.status_code == 201
    assert again.content == first.content
    assert again.headers["location"] == first.headers["location"]
    assert again.headers["idempotent-replayed"] == "true"
    assert len(await store.list_reminders("ana")) == 1


async def test_the_same_key_with_another_body_is_a_422(
    client: httpx.AsyncClient, store: Store
) -> None:
    headers = {"Idempotency-Key": "retry-2"}
    await client.post("/v1/reminders", json=ANA, headers=headers)
    other = await client.post("/v1/reminders", json={**ANA, "text": "Other"}, headers=headers)

    assert other.status_code == 422
    assert other.json()["type"].endswith("idempotency-key-reused")
    assert fields(other.json()) == ["Idempotency-Key"]
    assert len(await store.list_reminders("ana")) == 1


async def test_concurrent_retries_save_one_reminder(
    client: httpx.AsyncClient, store: Store
) -> None:
    headers = {"Idempotency-Key": "race"}
    answers = await asyncio.gather(
        *(client.post("/v1/reminders", json=ANA, headers=headers) for _ in range(5))
    )

    assert {a.status_code for a in answers} == {201}
    assert len({a.content for a in answers}) == 1
    assert len(await store.list_reminders("ana")) == 1


async def test_keys_are_scoped_to_the_caller(client: httpx.AsyncClient, store: Store) -> None:
    phone = await add_key(store, "phone")
    calendar = await add_key(store, "calendar")
    first = await client.post(
        "/v1/reminders", json=ANA, headers={**bearer(phone), "Idempotency-Key": "k"}
    )
    second = await client.post(
        "/v1/reminders", json=ONE_OFF, headers={**bearer(calendar), "Idempotency-Key": "k"}
    )

    assert first.status_code == second.status_code == 201
    assert first.json()["id"] != second.json()["id"]
    assert first.json()["source"] == "phone"
    assert second.json()["source"] == "calendar"


async def test_an_unusable_key_is_a_422(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/reminders", json=ANA, headers={"Idempotency-Key": "x" * 300})

    assert response.status_code == 422
    assert fields(response.json()) == ["Idempotency-Key"]


async def test_a_refused_request_saves_no_key(client: httpx.AsyncClient, store: Store) -> None:
    headers = {"Idempotency-Key": "fix-and-retry"}
    bad = await client.post("/v1/reminders", json={**ANA, "zone": "Nowhere"}, headers=headers)
    good = await client.post("/v1/reminders", json=ANA, headers=headers)

    assert bad.status_code == 422
    assert good.status_code == 201
