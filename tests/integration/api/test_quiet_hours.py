"""`/v1/owners/{owner}/quiet-hours`: set, read, clear; validation as problem+json naming the
field; each saver keeps its own, and apps are tenants (an app sees only its own)."""

from __future__ import annotations

from datetime import timedelta

import httpx

from tests.integration.api.conftest import (
    NOW,
    ONE_OFF,
    add_key,
    bearer,
    create,
    fields,
    owner_token,
)
from tocsin.clock import FakeClock
from tocsin.store import Store

PATH = "/v1/owners/ana/quiet-hours"
NIGHT = {"start": "22:00", "end": "07:00", "zone": "Europe/Berlin"}


async def test_quiet_hours_are_set_read_replaced_and_cleared(
    client: httpx.AsyncClient, clock: FakeClock
) -> None:
    assert (await client.get(PATH)).json() == {"quiet_hours": []}
    saved = await client.put(PATH, json=NIGHT)
    assert saved.status_code == 200, saved.text
    body = saved.json()
    assert {k: body[k] for k in NIGHT} == NIGHT
    assert (body["owner"], body["source"]) == ("ana", None)
    # NOW is 12:00 UTC, 14:00 in Berlin: outside 22:00-07:00.
    assert body["quiet_until"] is None
    assert (await client.get(PATH)).json() == {"quiet_hours": [body]}

    clock.set(NOW + timedelta(hours=10))  # 22:00 UTC, midnight in Berlin (CET, +01:00)
    inside = (await client.get(PATH)).json()["quiet_hours"][0]
    assert inside["quiet_until"] == "2026-10-22T05:00:00Z"  # 07:00 CEST (+02:00)

    replaced = await client.put(PATH, json={**NIGHT, "start": "23:30"})
    assert replaced.json()["start"] == "23:30"
    assert len((await client.get(PATH)).json()["quiet_hours"]) == 1
    assert (await client.delete(PATH)).status_code == 204
    assert (await client.delete(PATH)).status_code == 404
    assert (await client.get(PATH)).json() == {"quiet_hours": []}


async def test_bad_quiet_hours_are_refused_naming_the_field_and_nothing_is_saved(
    client: httpx.AsyncClient,
) -> None:
    cases = {
        "start": [{**NIGHT, "start": "24:00"}, {**NIGHT, "start": "7:00"}, {**NIGHT, "start": ""}],
        "end": [{**NIGHT, "end": "22:00"}, {**NIGHT, "end": "07:60"}, {**NIGHT, "end": "0７:00"}],
        "zone": [
            {**NIGHT, "zone": "Europe/Berln"},
            {k: v for k, v in NIGHT.items() if k != "zone"},
        ],
        "colour": [{**NIGHT, "colour": "red"}],
    }
    for field, bodies in cases.items():
        for body in bodies:
            answer = await client.put(PATH, json=body)
            assert answer.status_code == 422, (field, body, answer.text)
            assert answer.headers["content-type"] == "application/problem+json"
            assert fields(answer.json()) == [field], (field, answer.text)
    both = await client.put(PATH, json={**NIGHT, "end": "22:00", "zone": "Mars/Base"})
    assert fields(both.json()) == ["end", "zone"]
    assert (await client.get(PATH)).json() == {"quiet_hours": []}


async def test_each_saver_keeps_its_own_quiet_hours_and_apps_see_only_theirs(
    client: httpx.AsyncClient, store: Store
) -> None:
    x, y, token = (
        await add_key(store, "x"),
        await add_key(store, "y"),
        await owner_token(store, "ana"),
    )
    xs = await client.put(PATH, json=NIGHT, headers=bearer(x))
    own = await client.put(PATH, json={**NIGHT, "start": "21:00"}, headers=bearer(token))
    assert (xs.json()["source"], own.json()["source"]) == ("x", None)

    async def seen(credential: str) -> list[str | None]:
        answer = await client.get(PATH, headers=bearer(credential))
        return [q["source"] for q in answer.json()["quiet_hours"]]

    assert await seen(x) == ["x"]
    assert await seen(y) == []
    assert await seen(token) == [None, "x"]
    assert (await client.delete(PATH, headers=bearer(y))).status_code == 404  # y saved none
    other = await client.get("/v1/owners/bob/quiet-hours", headers=bearer(token))
    assert other.status_code == 404  # an owner token sees its own owner only
    assert (await client.delete(PATH, headers=bearer(x))).status_code == 204
    assert await seen(token) == [None]


async def test_a_reminder_says_whether_it_ignores_quiet_hours_and_an_edit_changes_it(
    client: httpx.AsyncClient,
) -> None:
    plain = await create(client, ONE_OFF)
    through = await create(client, ONE_OFF | {"ignore_quiet_hours": True})
    batch = await client.post(
        "/v1/reminders:batch", json={"items": [ONE_OFF | {"ignore_quiet_hours": True}]}
    )
    path = f"/v1/reminders/{plain['id']}"

    async def edit(body: dict[str, object]) -> httpx.Response:
        etag = (await client.get(path)).headers["ETag"]
        return await client.patch(path, json=body, headers={"If-Match": etag})

    turned_on = await edit({"ignore_quiet_hours": True})
    renamed = await edit({"text": "Call mom back"})
    null = await edit({"ignore_quiet_hours": None})
    turned_off = await edit({"ignore_quiet_hours": False})

    assert plain["ignore_quiet_hours"] is False
    assert through["ignore_quiet_hours"] is True
    assert (await client.get(f"/v1/reminders/{through['id']}")).json()["ignore_quiet_hours"]
    assert batch.status_code == 200, batch.text
    saved = await client.get(f"/v1/reminders/{batch.json()['items'][0]['id']}")
    assert saved.json()["ignore_quiet_hours"] is True
    assert turned_on.json()["ignore_quiet_hours"] is True
    assert renamed.json()["ignore_quiet_hours"] is True
    assert null.status_code == 422
    assert fields(null.json()) == ["ignore_quiet_hours"]
    assert turned_off.json()["ignore_quiet_hours"] is False


async def test_an_ignore_quiet_hours_that_is_not_a_boolean_is_refused_naming_it(
    client: httpx.AsyncClient,
) -> None:
    response = await client.post("/v1/reminders", json=ONE_OFF | {"ignore_quiet_hours": "yes"})

    assert response.status_code == 422
    assert fields(response.json()) == ["ignore_quiet_hours"]
