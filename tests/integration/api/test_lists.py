"""`/v1/lists…` and a list's reminders: make, read, rename; invite, accept, change and remove
members; save and read a list's reminders by role; validation as problem+json naming the
field, nothing saved; tenancy (apps see their own lists, an owner token the lists its owner is
on, across any line a 404) — on both backends."""

from __future__ import annotations

from typing import Any

import httpx

from tests.integration.api.conftest import ONE_OFF, add_key, bearer, fields, owner_token
from tests.integration.api.test_changes import ring
from tests.integration.api.test_snooze_in_flight import recorded
from tocsin.clock import FakeClock
from tocsin.store import Store

AT = {k: v for k, v in ONE_OFF.items() if k != "owner"}


async def _tokens(store: Store, *owners: str) -> list[dict[str, str]]:
    return [bearer(await owner_token(store, owner)) for owner in owners]


async def _list(client: httpx.AsyncClient, headers: dict[str, str], **body: Any) -> dict[str, Any]:
    made = await client.post("/v1/lists", json={"name": "Household"} | body, headers=headers)
    assert made.status_code == 201, made.text
    found: dict[str, Any] = made.json()
    return found


async def _household(
    client: httpx.AsyncClient, store: Store
) -> tuple[list[dict[str, str]], dict[str, Any]]:
    """Ana's list, with Ben an editor and Cy a viewer who joined it; Dan's token, on none;
    the tokens of ana, ben, cy and dan."""
    tokens = await _tokens(store, "ana", "ben", "cy", "dan")
    ana, ben, cy, _ = tokens
    shared = await _list(client, ana)
    path = f"/v1/lists/{shared['id']}"
    for member, role, token in (("ben", "editor", ben), ("cy", "viewer", cy)):
        await client.put(f"{path}/members/{member}", json={"role": role}, headers=ana)
        await client.post(f"{path}/members/{member}/accept", headers=token)
    return tokens, shared


def _members(shared: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {m["member"]: (m["role"], m["state"]) for m in shared["members"]}


async def test_a_list_is_made_shared_and_left(client: httpx.AsyncClient, store: Store) -> None:
    ana, ben, cy = await _tokens(store, "ana", "ben", "cy")
    made = await _list(client, ana)
    path = f"/v1/lists/{made['id']}"
    assert made["owner"] == f"list#{made['id']}"
    assert (made["source"], _members(made)) == (None, {"ana": ("owner", "joined")})
    assert made["members"][0]["joined_at"] is not None
    assert (await client.get(path, headers=ben)).status_code == 404  # not on it

    invited = await client.put(f"{path}/members/ben", json={"role": "editor"}, headers=ana)
    assert _members(invited.json())["ben"] == ("editor", "invited")
    assert (await client.get(path, headers=ben)).status_code == 200  # he sees it, to accept
    assert [s["id"] for s in (await client.get("/v1/lists", headers=ben)).json()["lists"]] == [
        made["id"]
    ]
    refused = await client.post(f"{path}/members/ben/accept", headers=cy)
    assert refused.status_code == 404  # cy sees no such list
    accepted = await client.post(f"{path}/members/ben/accept", headers=ben)
    assert _members(accepted.json())["ben"] == ("editor", "joined")

    # Only a list's owner manages it: an editor is answered 403 (he sees the list).
    assert (
        await client.put(f"{path}/members/cy", json={"role": "viewer"}, headers=ben)
    ).status_code == 403
    assert (await client.patch(path, json={"name": "Home"}, headers=ben)).status_code == 403
    renamed = await client.patch(path, json={"name": "Home"}, headers=ana)
    assert renamed.json()["name"] == "Home"

    # The last owner cannot leave, or stop being one, while others are on the list.
    last = await client.delete(f"{path}/members/ana", headers=ana)
    assert (last.status_code, last.json()["type"]) == (409, "urn:tocsin:problem:last-owner")
    demoted = await client.put(f"{path}/members/ana", json={"role": "viewer"}, headers=ana)
    assert demoted.status_code == 409
    assert (await client.delete(f"{path}/members/ben", headers=ben)).status_code == 204  # leaves
    assert (await client.get(path, headers=ben)).status_code == 404
    assert _members((await client.get(path, headers=ana)).json()) == {"ana": ("owner", "joined")}
    assert (await client.delete(f"{path}/members/ben", headers=ana)).status_code == 404


async def test_a_lists_reminders_follow_each_members_role(
    client: httpx.AsyncClient, store: Store
) -> None:
    (ana, ben, cy, dan), shared = await _household(client, store)
    path = f"/v1/lists/{shared['id']}"
    await client.put(f"{path}/members/dan", json={"role": "editor"}, headers=ana)  # invited

    body = {**AT, "list": shared["id"]}
    saved = await client.post("/v1/reminders", json={**body, "assignee": "cy"}, headers=ben)
    assert saved.status_code == 201, saved.text
    made = saved.json()
    assert (made["owner"], made["list"], made["assignee"]) == (shared["owner"], shared["id"], "cy")
    assert "warnings" not in made
    every = await client.post("/v1/reminders", json=body, headers=ana)
    assert every.json()["assignee"] is None

    one = f"/v1/reminders/{made['id']}"
    read = await client.get(one, headers=cy)
    assert (read.status_code, read.json()["assignee"]) == (200, "cy")
    listed = await client.get(f"/v1/reminders?list={shared['id']}", headers=cy)
    assert sorted(r["id"] for r in listed.json()["reminders"]) == sorted(
        [made["id"], every.json()["id"]]
    )
    assert [r["assignee"] for r in listed.json()["reminders"]].count("cy") == 1

    # A viewer reads but does not change; an invited member, or someone else, sees nothing.
    etag = {"If-Match": read.headers["ETag"]}
    assert (await client.patch(one, json={"text": "x"}, headers=cy | etag)).status_code == 403
    assert (await client.delete(one, headers=cy)).status_code == 403
    assert (
        await client.post(f"{one}/snooze", json={"snooze": "10m"}, headers=cy)
    ).status_code == 403
    assert (await client.post("/v1/reminders", json=body, headers=cy)).status_code == 403
    for outsider in (dan, bearer(await owner_token(store, "eve"))):
        assert (await client.get(one, headers=outsider)).status_code == 404
        assert (await client.delete(one, headers=outsider)).status_code == 404
        refused = await client.post("/v1/reminders", json=body, headers=outsider)
        assert fields(refused.json()) == ["list"]
        reading = await client.get(f"/v1/reminders?list={shared['id']}", headers=outsider)
        assert reading.status_code == 404

    to_feed = await client.patch(one, json={"channel": "inapp"}, headers=ben | etag)
    assert fields(to_feed.json()) == ["channel"]
    edited = await client.patch(one, json={"text": "Bins out"}, headers=ben | etag)
    assert (edited.status_code, edited.json()["text"]) == (200, "Bins out")
    assert (await client.delete(one, headers=ana)).status_code == 204

    # Whoever leaves sees none of it from then on.
    await client.delete(f"{path}/members/ben", headers=ben)
    assert (await client.get(f"/v1/reminders/{every.json()['id']}", headers=ben)).status_code == 404


async def test_apps_are_tenants_of_their_lists(client: httpx.AsyncClient, store: Store) -> None:
    x, y = bearer(await add_key(store, "x")), bearer(await add_key(store, "y"))
    (ana,) = await _tokens(store, "ana")
    made = await _list(client, x, owner="ana")
    path = f"/v1/lists/{made['id']}"
    assert made["source"] == "x"
    assert (await client.get(path, headers=y)).status_code == 404
    assert (
        await client.put(f"{path}/members/ben", json={"role": "editor"}, headers=y)
    ).status_code == 404
    assert (await client.get("/v1/lists", headers=y)).json() == {"lists": []}
    assert [s["id"] for s in (await client.get("/v1/lists", headers=x)).json()["lists"]] == [
        made["id"]
    ]
    assert (await client.get(path, headers=ana)).status_code == 200  # she is on it

    # The app invites and accepts for its users; another app's key cannot save in the list.
    await client.put(f"{path}/members/ben", json={"role": "viewer"}, headers=x)
    assert (await client.post(f"{path}/members/ben/accept", headers=x)).status_code == 200
    body = {**AT, "list": made["id"]}
    assert (await client.post("/v1/reminders", json=body, headers=x)).status_code == 201
    assert fields((await client.post("/v1/reminders", json=body, headers=y)).json()) == ["list"]
    assert (await client.get(f"/v1/reminders?list={made['id']}", headers=y)).status_code == 404
    own = await _list(client, ana)
    assert (await client.get(f"/v1/lists/{own['id']}", headers=x)).status_code == 404


async def test_bad_lists_and_members_are_refused_naming_the_field_and_nothing_is_saved(
    client: httpx.AsyncClient, store: Store
) -> None:
    (ana,) = await _tokens(store, "ana")
    x = bearer(await add_key(store, "x"))
    for body, named in (
        ({"name": ""}, "name"),
        ({"name": "   "}, "name"),
        ({"name": "a\x00"}, "name"),
        ({"name": "n" * 101}, "name"),
        ({}, "name"),
        ({"name": "L", "colour": "red"}, "colour"),
        ({"name": "L", "owner": "a b"}, "owner"),
    ):
        refused = await client.post("/v1/lists", json=body, headers=ana)
        assert refused.status_code == 422, (body, refused.text)
        assert refused.headers["content-type"] == "application/problem+json"
        assert fields(refused.json()) == [named], body
    assert fields((await client.post("/v1/lists", json={"name": "L"}, headers=x)).json()) == [
        "owner"
    ]
    assert (await client.get("/v1/lists", headers=ana)).json() == {"lists": []}

    made = await _list(client, ana)
    path = f"/v1/lists/{made['id']}"
    for role in ("admin", "", None, 3):
        refused = await client.put(f"{path}/members/ben", json={"role": role}, headers=ana)
        assert fields(refused.json()) == ["role"], role
    bad_member = await client.put(f"{path}/members/a%00b", json={"role": "viewer"}, headers=ana)
    assert fields(bad_member.json()) == ["member"]
    for not_an_id in ("%00", "x" * 300, "06h46pkr2a7jv1nkr0gI"):
        assert (await client.get(f"/v1/lists/{not_an_id}", headers=ana)).status_code == 404

    body = {**AT, "list": made["id"]}
    refusals: list[tuple[dict[str, str], list[str]]] = [
        ({"owner": "ana"}, ["owner"]),
        ({"assignee": "zed"}, ["assignee"]),
        ({"channel": "inapp"}, ["channel"]),
        ({"channel": "inapp", "owner": "ana"}, ["owner", "channel"]),
        ({"list": "nope"}, ["list"]),
        ({"list": "06h46pkr2a7jv1nkr0gn"}, ["list"]),
    ]
    for extra, expected in refusals:
        refused = await client.post("/v1/reminders", json=body | extra, headers=ana)
        assert refused.status_code == 422, (extra, refused.text)
        assert fields(refused.json()) == expected, (extra, refused.text)
    alone = await client.post("/v1/reminders", json={**AT, "assignee": "ana"}, headers=ana)
    assert fields(alone.json()) == ["assignee"]
    items = [body | extra for extra, _ in refusals]
    batch = await client.post("/v1/reminders:batch", json={"items": items}, headers=ana)
    assert (batch.status_code, batch.json()["created"]) == (200, 0), batch.text
    in_batch = [fields(item["problem"]) for item in batch.json()["items"]]
    assert in_batch == [
        [f"items.{n}.{f}" for f in expected] for n, (_, expected) in enumerate(refusals)
    ]
    assert await store.list_reminders(made["owner"]) == []
    assert await store.list_reminders("ana") == []
    listed = await client.get("/v1/reminders?list=a%00", headers=ana)
    assert fields(listed.json()) == ["list"]


async def test_an_assignee_is_saved_with_its_reminder_or_not_at_all(
    client: httpx.AsyncClient, store: Store
) -> None:
    (ana,) = await _tokens(store, "ana")
    made = await _list(client, ana)
    body = {**AT, "list": made["id"], "assignee": "ana"}
    key = {"Idempotency-Key": "one"}
    first = await client.post("/v1/reminders", json=body, headers=ana | key)
    again = await client.post("/v1/reminders", json=body, headers=ana | key)
    assert (first.status_code, again.status_code) == (201, 201)
    assert again.headers["Idempotent-Replayed"] == "true"
    saved = await store.list_reminders(made["owner"])
    assert [r.id for r in saved] == [first.json()["id"]]
    assert await store.assignees_of([first.json()["id"]]) == {first.json()["id"]: "ana"}


async def test_a_snoozed_ring_of_an_assigned_reminder_stays_its_assignees(
    client: httpx.AsyncClient, store: Store, clock: FakeClock
) -> None:
    (ana,) = await _tokens(store, "ana")
    shared = await _list(client, ana)
    body = {**AT, "list": shared["id"], "assignee": "ana"}
    made = (await client.post("/v1/reminders", json=body, headers=ana)).json()
    firing = await ring(store, clock, made["id"])
    await recorded(store, clock, firing)

    snoozed = await client.post(
        f"/v1/reminders/{made['id']}/snooze", json={"snooze": "10m"}, headers=ana
    )
    assert snoozed.status_code == 201, snoozed.text
    copy = snoozed.json()
    assert (copy["list"], copy["assignee"], copy["snoozed_from"]) == (
        shared["id"],
        "ana",
        firing.id,
    )


async def test_an_edit_reassigns_a_lists_reminder_or_gives_it_to_everyone(
    client: httpx.AsyncClient, store: Store
) -> None:
    ana, ben = await _tokens(store, "ana", "ben")
    shared = await _list(client, ana)
    await client.put(f"/v1/lists/{shared['id']}/members/ben", json={"role": "editor"}, headers=ana)
    made = await client.post("/v1/reminders", json={**AT, "list": shared["id"]}, headers=ana)
    path = f"/v1/reminders/{made.json()['id']}"

    async def edit(body: dict[str, Any]) -> httpx.Response:
        etag = (await client.get(path, headers=ana)).headers["ETag"]
        return await client.patch(path, json=body, headers=ana | {"If-Match": etag})

    assert (await edit({"assignee": "ben"})).json()["assignee"] == "ben"  # invited will do
    both = await edit({"assignee": "ana", "text": "Bins out"})
    assert (both.json()["assignee"], both.json()["text"]) == ("ana", "Bins out")
    assert (await edit({"text": "Bins out!"})).json()["assignee"] == "ana"  # kept
    assert (await edit({"assignee": None})).json()["assignee"] is None  # everyone
    assert await store.assignees_of([made.json()["id"]]) == {}
    refused = await edit({"assignee": "zed", "text": "never saved"})
    assert fields(refused.json()) == ["assignee"]
    assert (await client.get(path, headers=ana)).json()["text"] == "Bins out!"

    own = await client.post("/v1/reminders", json=AT, headers=ben)
    etag = {"If-Match": own.headers["ETag"]}
    alone = await client.patch(
        f"/v1/reminders/{own.json()['id']}", json={"assignee": "ben"}, headers=ben | etag
    )
    assert fields(alone.json()) == ["assignee"]


async def test_a_batch_saves_a_lists_reminders_as_a_create_would_each_item_on_its_own(
    client: httpx.AsyncClient, store: Store
) -> None:
    (_, ben, cy, dan), shared = await _household(client, store)
    listed = {**AT, "list": shared["id"]}
    items = [
        listed | {"assignee": "ana", "text": "Bins out"},
        AT | {"owner": "ben", "text": "His own"},
        listed | {"text": "Everyone"},
        listed | {"assignee": "zed"},
        listed | {"channel": "inapp"},
        listed | {"list": "06h46pkr2a7jv1nkr0gn"},
        listed | {"repeat": "every blue moon"},
    ]
    batch = await client.post("/v1/reminders:batch", json={"items": items}, headers=ben)
    assert batch.status_code == 200, batch.text
    answer = batch.json()
    assert (answer["created"], answer["invalid"]) == (3, 4)
    saved = [item["id"] for item in answer["items"][:3]]
    assert [item["status"] for item in answer["items"][:3]] == ["created"] * 3
    assert [fields(item["problem"]) for item in answer["items"][3:]] == [
        ["items.3.assignee"],
        ["items.4.channel"],
        ["items.5.list"],
        ["items.6.repeat"],
    ]
    in_list = await store.list_reminders(shared["owner"])
    assert sorted(r.id for r in in_list) == sorted([saved[0], saved[2]])
    assert [r.id for r in await store.list_reminders("ben")] == [saved[1]]
    assert await store.assignees_of(saved) == {saved[0]: "ana"}
    shown = (await client.get(f"/v1/reminders/{saved[0]}", headers=cy)).json()
    assert (shown["list"], shown["assignee"], shown["text"]) == (shared["id"], "ana", "Bins out")

    # The same checks as a create: a viewer is refused (403), someone not on it too (422),
    # item by item, and nothing of theirs is saved.
    viewer = await client.post("/v1/reminders:batch", json={"items": [listed]}, headers=cy)
    problem = viewer.json()["items"][0]["problem"]
    assert (problem["status"], problem["type"]) == (403, "urn:tocsin:problem:viewer")
    assert fields(problem) == ["items.0.list"]
    outsider = await client.post("/v1/reminders:batch", json={"items": [listed]}, headers=dan)
    assert fields(outsider.json()["items"][0]["problem"]) == ["items.0.list"]
    assert len(await store.list_reminders(shared["owner"])) == 2


async def test_deleting_a_list_cancels_its_reminders_and_takes_only_an_owner(
    client: httpx.AsyncClient, store: Store, clock: FakeClock
) -> None:
    ana, ben, cy = await _tokens(store, "ana", "ben", "cy")
    other = bearer(await add_key(store, "other"))
    shared = await _list(client, ana)
    path = f"/v1/lists/{shared['id']}"
    await client.put(f"{path}/members/ben", json={"role": "editor"}, headers=ana)
    await client.post(f"{path}/members/ben/accept", headers=ben)
    body = {**AT, "list": shared["id"]}
    one_off = (await client.post("/v1/reminders", json=body, headers=ben)).json()
    series = {**body, "at": None, "repeat": "every day at 9:00", "assignee": "ben"}
    daily = (await client.post("/v1/reminders", json=series, headers=ben)).json()
    rung = (await client.post("/v1/reminders", json=body | {"text": "rung"}, headers=ben)).json()
    on_its_way = await ring(store, clock, rung["id"])  # claimed before the delete
    own = (await client.post("/v1/reminders", json=AT, headers=ana)).json()

    assert (await client.delete(path, headers=ben)).status_code == 403  # an editor
    for outsider in (cy, other):
        assert (await client.delete(path, headers=outsider)).status_code == 404
    assert (await client.delete(path, headers=ana)).status_code == 204

    assert (await client.get(path, headers=ana)).status_code == 404
    assert (await client.get("/v1/lists", headers=ben)).json() == {"lists": []}
    for made in (one_off, daily):
        found = await store.get_reminder(made["id"], now=clock.now())
        assert found is not None
        assert (found.status.value, found.due_at) == ("cancelled", None)
    found = await store.get_reminder(rung["id"], now=clock.now())
    assert found is not None
    assert found.last_firing is not None
    assert found.last_firing.id == on_its_way.id  # its ring goes as claimed
    mine = await store.get_reminder(own["id"], now=clock.now())
    assert mine is not None
    assert mine.status.value == "pending"
    assert (await client.delete(path, headers=ana)).status_code == 404
    late = await client.post("/v1/reminders", json=body, headers=ana)
    assert fields(late.json()) == ["list"]
