"""Ringing until done through the API: `until_done` read, shown and edited; a ring marked
done (`POST /v1/firings/{id}/done`) keeps when, once, and takes back the nags of its
occurrence still to come; refusals name the field, and a ring of another owner is a 404."""

from __future__ import annotations

from datetime import timedelta

import httpx

from tests.integration.api.conftest import ANA, ONE_OFF, bearer, create, fields, owner_token
from tests.integration.api.test_changes import patch, rang
from tocsin.clock import FakeClock
from tocsin.store import Store


async def done(client: httpx.AsyncClient, firing_id: str, **kwargs: object) -> httpx.Response:
    return await client.post(f"/v1/firings/{firing_id}/done", **kwargs)  # type: ignore[arg-type]


async def test_a_one_off_nags_until_a_ring_of_it_is_marked_done(
    client: httpx.AsyncClient, store: Store, clock: FakeClock
) -> None:
    made = await create(client, ONE_OFF | {"until_done": "5m", "until_done_max": 3})
    assert (made["until_done"], made["until_done_max"]) == ("5m", 3)
    assert made["next"] == "2026-10-21T17:00:00Z"

    firing = await rang(store, clock, made["id"])
    nagging = (await client.get(f"/v1/reminders/{made['id']}")).json()
    first = await done(client, firing.id)
    clock.advance(timedelta(minutes=1))
    again = await done(client, firing.id)
    after = (await client.get(f"/v1/reminders/{made['id']}")).json()

    assert (nagging["status"], nagging["next"]) == ("pending", "2026-10-21T17:05:00Z")
    assert nagging["next_occurrence"] == "2026-10-21T17:00:00Z"  # the ring it nags about
    assert first.status_code == 200, first.text
    assert first.json()["id"] == firing.id
    assert first.json()["done_at"] == "2026-10-21T17:00:00Z"
    assert again.json()["done_at"] == first.json()["done_at"]  # once
    assert (after["status"], after["next"]) == ("fired", None)


async def test_a_series_done_waits_for_its_next_occurrence(
    client: httpx.AsyncClient, store: Store, clock: FakeClock
) -> None:
    made = await create(client, ANA | {"until_done": "10m"})
    assert made["until_done_max"] == 6

    firing = await rang(store, clock, made["id"])
    marked = await done(client, firing.id)
    after = (await client.get(f"/v1/reminders/{made['id']}")).json()

    assert marked.status_code == 200, marked.text
    assert (after["status"], after["next"]) == ("pending", "2026-11-02T14:00:00Z")


async def test_an_edit_changes_until_done_and_null_rings_once(client: httpx.AsyncClient) -> None:
    made = await create(client, ONE_OFF | {"until_done": "5m"})
    etag = (await client.get(f"/v1/reminders/{made['id']}")).headers["ETag"]
    longer = await patch(client, made["id"], {"until_done_max": 10}, etag)
    once = await patch(client, made["id"], {"until_done": None}, longer.headers["ETag"])

    assert (longer.json()["until_done"], longer.json()["until_done_max"]) == ("5m", 10)
    assert (once.json()["until_done"], once.json()["until_done_max"]) == (None, None)


async def test_bad_values_and_rings_not_there_or_not_the_callers_are_refused(
    client: httpx.AsyncClient, store: Store, clock: FakeClock
) -> None:
    short = await client.post("/v1/reminders", json=ONE_OFF | {"until_done": "30s"})
    many = await client.post(
        "/v1/reminders", json=ONE_OFF | {"until_done": "5m", "until_done_max": 0}
    )
    made = await create(client, ONE_OFF | {"until_done": "5m"})
    firing = await rang(store, clock, made["id"])
    bob = bearer(await owner_token(store, "bob"))

    assert short.status_code == 422
    assert fields(short.json()) == ["until_done"]
    assert many.status_code == 422
    assert fields(many.json()) == ["until_done_max"]
    assert (await done(client, f"{made['id']}.1")).status_code == 404
    assert (await done(client, "nothing")).status_code == 404
    assert (await done(client, firing.id, headers=bob)).status_code == 404
