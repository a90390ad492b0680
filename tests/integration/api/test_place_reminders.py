"""Reminders that ring at a place: `on` on a create and an edit, crossings reported at
`/v1/owners/{owner}/places/{place}/events`; validation as problem+json naming the field with
nothing saved; places and crossings follow the apps' tenancy (another app's place is a 404)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx

from tests.integration.api.conftest import NOW, add_key, bearer, create, fields, owner_token
from tocsin.store import Store
from tocsin.time import format_utc

HOME = {"name": "Home", "latitude": 52.52, "longitude": 13.405}


async def _place(client: httpx.AsyncClient, **headers: str) -> str:
    answer = await client.post("/v1/owners/ana/places", json=HOME, headers=headers)
    assert answer.status_code == 201, answer.text
    place_id: str = answer.json()["id"]
    return place_id


def _at_place(place: str, **on: Any) -> dict[str, Any]:
    return {
        "owner": "ana",
        "text": "Take the bins out",
        "zone": "Europe/Berlin",
        "channel": "log",
        "on": {"place": place, **on},
    }


async def _cross(
    client: httpx.AsyncClient, place: str, body: dict[str, Any], **headers: str
) -> httpx.Response:
    return await client.post(f"/v1/owners/ana/places/{place}/events", json=body, headers=headers)


ARRIVED = {"event": "arrive", "at": format_utc(NOW - timedelta(minutes=1))}


async def test_a_place_reminder_shows_its_trigger_waits_without_a_time_and_rings_on_arrival(
    client: httpx.AsyncClient,
) -> None:
    home = await _place(client)
    made = await create(client, _at_place(home, after="13:00", once="day"))
    assert made["on"] == {
        "place": home,
        "event": "arrive",
        "after": "13:00",
        "before": None,
        "once": "day",
    }
    assert (made["status"], made["next"], made["at"], made["repeat"]) == (
        "pending",
        None,
        None,
        None,
    )
    listed = (await client.get("/v1/reminders?owner=ana")).json()["reminders"]
    assert [r["on"] for r in listed] == [made["on"]]
    times = await client.get(f"/v1/reminders/{made['id']}/occurrences?count=3")
    assert times.json()["occurrences"] == []

    # 11:59 UTC is 13:59 in Berlin (CEST): inside the window from 13:00
    crossed = await _cross(client, home, ARRIVED)
    assert crossed.status_code == 200, crossed.text
    firing = f"{made['id']}.{int((NOW - timedelta(minutes=1)).timestamp())}"
    assert crossed.json()["rang"] == [{"reminder": made["id"], "firing": firing}]
    firings = (await client.get(f"/v1/reminders/{made['id']}/firings")).json()["firings"]
    assert [(f["id"], f["state"]) for f in firings] == [(firing, "queued")]
    shown = (await client.get(f"/v1/reminders/{made['id']}")).json()
    assert shown["last_firing"]["id"] == firing
    assert (shown["status"], shown["next"]) == ("pending", None)
    # a snooze of its ring is a fresh one-off, as a series' is; the place reminder stays
    snoozed = await client.post(f"/v1/reminders/{made['id']}/snooze", json={"snooze": "10m"})
    assert snoozed.status_code == 201, snoozed.text
    assert snoozed.json()["next"] == format_utc(NOW + timedelta(minutes=10))
    assert (snoozed.json()["snoozed_from"], "on" in snoozed.json()) == (firing, False)

    # moved out of the window by an edit: the next arrival passes it by
    tag = (await client.get(f"/v1/reminders/{made['id']}")).headers["etag"]
    edited = await client.patch(
        f"/v1/reminders/{made['id']}",
        json={"on": {"place": home, "after": "18:00"}},
        headers={"If-Match": tag},
    )
    assert edited.status_code == 200, edited.text
    assert edited.json()["on"]["after"] == "18:00"
    later = {"event": "arrive", "at": format_utc(NOW)}
    passed = (await _cross(client, home, later)).json()
    assert passed["rang"] == []
    assert passed["passed"][0]["reason"].startswith("outside its window 18:00-24:00")

    # its place is not deleted while it is pending: it could never ring again
    refused = await client.delete(f"/v1/owners/ana/places/{home}")
    assert refused.status_code == 409, refused.text
    assert refused.json()["reminders"] == [made["id"]]
    cancelled = await client.delete(f"/v1/reminders/{made['id']}")
    assert cancelled.status_code == 200  # its ring is on its way (queued: no worker here)
    assert cancelled.json()["last_firing"]["id"] == firing
    assert (await client.delete(f"/v1/owners/ana/places/{home}")).status_code == 204


async def test_bad_place_reminders_and_crossings_are_refused_naming_the_field(
    client: httpx.AsyncClient,
) -> None:
    home = await _place(client)
    creates = {
        "on": [{**_at_place(home), "at": "2026-10-22T09:00"}, {**_at_place(home), "when": "9am"}],
        "on.place": [_at_place("06h2t0k5f07g6e1x9q3d"), _at_place("no such")],
        "on.event": [_at_place(home, event="arrived")],
        "on.after": [_at_place(home, after="7:00")],
        "on.before": [_at_place(home, after="07:00", before="07:00")],
        "on.once": [_at_place(home, once="weekly")],
        "zone": [{**_at_place(home), "zone": "Europe/Berln"}],
    }
    for field, bodies in creates.items():
        for body in bodies:
            answer = await client.post("/v1/reminders", json=body)
            assert answer.status_code == 422, (field, body, answer.text)
            assert fields(answer.json()) == [field], (field, answer.text)
    assert (await client.get("/v1/reminders?owner=ana")).json()["reminders"] == []

    crossings = {
        "at": [
            {"event": "arrive", "at": "2026-10-21T11:59:00"},  # no offset
            {"event": "arrive", "at": format_utc(NOW - timedelta(minutes=16))},
            {"event": "arrive", "at": format_utc(NOW + timedelta(minutes=6))},
        ],
        "event": [{"event": "came", "at": format_utc(NOW)}],
    }
    for field, bodies in crossings.items():
        for body in bodies:
            answer = await _cross(client, home, body)
            assert answer.status_code == 422, (field, body, answer.text)
            assert fields(answer.json()) == [field], (field, answer.text)

    timed = await create(client, {**_at_place(home), "on": None} | {"at": "2026-10-22T09:00"})
    tag = (await client.get(f"/v1/reminders/{timed['id']}")).headers["etag"]
    patched = await client.patch(
        f"/v1/reminders/{timed['id']}", json={"on": {"place": home}}, headers={"If-Match": tag}
    )
    assert fields(patched.json()) == ["on"], patched.text
    placed = await create(client, _at_place(home))
    tag = (await client.get(f"/v1/reminders/{placed['id']}")).headers["etag"]
    patched = await client.patch(
        f"/v1/reminders/{placed['id']}", json={"at": "2026-10-22T09:00"}, headers={"If-Match": tag}
    )
    assert fields(patched.json()) == ["at"], patched.text


async def test_places_and_their_crossings_follow_the_apps_tenancy(
    client: httpx.AsyncClient, store: Store
) -> None:
    x, y = await add_key(store, "x"), await add_key(store, "y")
    token, bobs = await owner_token(store, "ana"), await owner_token(store, "bob")
    xs_home = await _place(client, **bearer(x))
    refused = await client.post("/v1/reminders", json=_at_place(xs_home), headers=bearer(y))
    assert fields(refused.json()) == ["on.place"], refused.text
    made = await create(client, _at_place(xs_home), headers=bearer(x))

    assert (await _cross(client, xs_home, ARRIVED, **bearer(y))).status_code == 404
    bob = await client.post(
        f"/v1/owners/bob/places/{xs_home}/events", json=ARRIVED, headers=bearer(bobs)
    )
    assert bob.status_code == 404
    assert (await _cross(client, xs_home, ARRIVED, **bearer(bobs))).status_code == 404
    owners = await _cross(client, xs_home, ARRIVED, **bearer(token))
    assert [r["reminder"] for r in owners.json()["rang"]] == [made["id"]]
    again = await _cross(client, xs_home, ARRIVED, **bearer(x))
    assert again.json()["rang"] == []


async def test_a_batch_saves_place_reminders_and_refuses_one_on_no_place_of_the_owners(
    client: httpx.AsyncClient,
) -> None:
    home = await _place(client)
    items = [_at_place(home), _at_place("06h2t0k5f07g6e1x9q3d"), {**_at_place(home), "owner": "bo"}]
    answer = await client.post("/v1/reminders:batch", json={"items": items})
    assert answer.status_code == 200, answer.text
    results = answer.json()["items"]
    assert [r["status"] for r in results] == ["created", "invalid", "invalid"]
    assert [fields(r["problem"]) for r in results[1:]] == [
        ["items.1.on.place"],
        ["items.2.on.place"],
    ]
    saved = (await client.get(f"/v1/reminders/{results[0]['id']}")).json()
    assert (saved["on"]["place"], saved["next"]) == (home, None)


async def test_a_place_reminder_takes_no_early_alerts_and_no_nags(
    client: httpx.AsyncClient,
) -> None:
    place = await _place(client)
    alerted = await client.post("/v1/reminders", json=_at_place(place) | {"alerts": ["15m"]})
    nagging = await client.post("/v1/reminders", json=_at_place(place) | {"until_done": "5m"})
    made = await client.post("/v1/reminders", json=_at_place(place))
    path = f"/v1/reminders/{made.json()['id']}"
    etag = made.headers["ETag"]
    edited = await client.patch(path, json={"alerts": ["1h"]}, headers={"If-Match": etag})

    assert alerted.status_code == 422
    assert [e["field"] for e in alerted.json()["errors"]] == ["alerts"]
    assert nagging.status_code == 422
    assert [e["field"] for e in nagging.json()["errors"]] == ["until_done"]
    assert (made.json()["alerts"], made.json()["until_done"]) == ([], None)
    assert made.json()["next_occurrence"] is None
    assert edited.status_code == 422
    assert [e["field"] for e in edited.json()["errors"]] == ["alerts"]


async def test_a_once_ever_reminder_reads_fired_after_its_one_ring_and_rings_no_more(
    client: httpx.AsyncClient,
) -> None:
    home = await _place(client)
    ever = await create(client, _at_place(home, once="ever"))
    plain = await create(client, _at_place(home))
    tag = (await client.get(f"/v1/reminders/{ever['id']}")).headers["etag"]

    crossed = await _cross(client, home, ARRIVED)
    assert {r["reminder"] for r in crossed.json()["rang"]} == {ever["id"], plain["id"]}
    shown = (await client.get(f"/v1/reminders/{ever['id']}")).json()
    firing = f"{ever['id']}.{int((NOW - timedelta(minutes=1)).timestamp())}"
    assert (shown["status"], shown["next"], shown["last_firing"]["id"]) == ("fired", None, firing)
    assert shown["on"]["once"] == "ever"
    assert (await client.get(f"/v1/reminders/{plain['id']}")).json()["status"] == "pending"
    fired = (await client.get("/v1/reminders?owner=ana&status=fired")).json()["reminders"]
    assert [r["id"] for r in fired] == [ever["id"]]

    # An edit read before its ring loses; a cancel finds it rang (its ring is queued here).
    stale = await client.patch(
        f"/v1/reminders/{ever['id']}", json={"text": "late"}, headers={"If-Match": tag}
    )
    assert stale.status_code == 412, stale.text
    cancel = await client.delete(f"/v1/reminders/{ever['id']}")
    assert (cancel.status_code, cancel.json()["type"]) == (409, "urn:tocsin:problem:ringing")

    # A later crossing (past the flap window) rings the plain one alone; the fired one is
    # not armed any more.
    after_flap = format_utc(NOW + timedelta(minutes=4, seconds=30))
    later = (await _cross(client, home, {"event": "arrive", "at": after_flap})).json()
    assert [r["reminder"] for r in later["rang"]] == [plain["id"]]
    assert ever["id"] not in {p["reminder"] for p in later["passed"]}
    # Not in use either: only the plain one keeps its place from being deleted.
    refused = (await client.delete(f"/v1/owners/ana/places/{home}")).json()
    assert refused["reminders"] == [plain["id"]]
