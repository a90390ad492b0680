"""Early alerts through the API: read and written back earliest first, the first ring the
first alert still to come, changed by an edit, refused naming the lead at fault."""

from __future__ import annotations

import httpx

from tests.integration.api.conftest import ANA, ONE_OFF, create, fields


async def test_a_one_off_rings_first_at_its_first_alert_still_to_come(
    client: httpx.AsyncClient,
) -> None:
    # 18:00 in Lisbon is 17:00Z; NOW is 12:00Z, after the day before's 17:00Z.
    made = await create(client, ONE_OFF | {"alerts": ["15m", "1d"]})

    assert made["alerts"] == ["1d", "15m"]
    assert made["next"] == "2026-10-21T16:45:00Z"
    assert made["next_occurrence"] == "2026-10-21T17:00:00Z"
    shown = (await client.get(f"/v1/reminders/{made['id']}")).json()
    assert (shown["alerts"], shown["next"]) == (["1d", "15m"], "2026-10-21T16:45:00Z")


async def test_a_series_gives_each_occurrence_its_alerts_on_the_local_clock(
    client: httpx.AsyncClient,
) -> None:
    # Mondays 09:00 New York; the day before is Sunday 09:00 there.
    made = await create(client, ANA | {"alerts": ["1d"]})

    assert made["next"] == "2026-10-25T13:00:00Z"  # Sunday 09:00 EDT
    assert made["next_occurrence"] == "2026-10-26T13:00:00Z"  # Monday 09:00 EDT
    preview = await client.get(f"/v1/reminders/{made['id']}")
    assert preview.json()["rule"] == made["rule"]


async def test_a_reminder_without_alerts_shows_none_and_its_next_is_its_occurrence(
    client: httpx.AsyncClient,
) -> None:
    made = await create(client, ONE_OFF)

    assert made["alerts"] == []
    assert made["next"] == made["next_occurrence"] == "2026-10-21T17:00:00Z"


async def test_an_edit_changes_the_alerts_and_the_next_ring_and_keeps_them_otherwise(
    client: httpx.AsyncClient,
) -> None:
    made = await create(client, ONE_OFF | {"alerts": ["1h"]})
    path = f"/v1/reminders/{made['id']}"

    async def edit(body: dict[str, object]) -> httpx.Response:
        etag = (await client.get(path)).headers["ETag"]
        return await client.patch(path, json=body, headers={"If-Match": etag})

    renamed = await edit({"text": "Call mom back"})
    more = await edit({"alerts": ["2h", "30m"]})
    none = await edit({"alerts": []})
    null = await edit({"alerts": None})

    assert (renamed.json()["alerts"], renamed.json()["next"]) == (["1h"], "2026-10-21T16:00:00Z")
    assert (more.json()["alerts"], more.json()["next"]) == (["2h", "30m"], "2026-10-21T15:00:00Z")
    assert (none.json()["alerts"], none.json()["next"]) == ([], "2026-10-21T17:00:00Z")
    assert null.status_code == 422
    assert fields(null.json()) == ["alerts"]


async def test_a_bad_lead_is_refused_naming_it_and_nothing_is_saved(
    client: httpx.AsyncClient,
) -> None:
    cases = {
        ("soon",): ["alerts.0"],
        ("1d", "30s"): ["alerts.1"],
        ("15m", "15m"): ["alerts.1"],
        ("1m", "2m", "3m", "4m", "5m", "6m"): ["alerts"],
    }
    for leads, named in cases.items():
        answer = await client.post("/v1/reminders", json=ONE_OFF | {"alerts": list(leads)})
        assert answer.status_code == 422, answer.text
        assert answer.headers["content-type"] == "application/problem+json"
        assert fields(answer.json()) == named, leads
    not_a_list = await client.post("/v1/reminders", json=ONE_OFF | {"alerts": "15m"})
    assert not_a_list.status_code == 422
    assert fields(not_a_list.json()) == ["alerts"]
    listed = (await client.get("/v1/reminders", params={"owner": "ana"})).json()
    assert listed["reminders"] == []


async def test_a_batch_item_with_a_bad_lead_is_named_by_its_index(
    client: httpx.AsyncClient,
) -> None:
    answer = await client.post(
        "/v1/reminders:batch",
        json={"items": [ONE_OFF | {"alerts": ["15m"]}, ONE_OFF | {"alerts": ["15 fortnights"]}]},
    )

    assert answer.status_code == 200, answer.text
    items = answer.json()["items"]
    assert items[0]["status"] == "created"
    assert items[0]["next"] == "2026-10-21T16:45:00Z"
    assert items[1]["status"] == "invalid", items[1]
    assert fields(items[1]["problem"]) == ["items.1.alerts.0"]
