"""Text that cannot be an id, an owner or a field's value never reaches the store: a path id
(a reminder's, a contact's, a list's) with a NUL (or of any shape ids do not have) is a 404,
an owner in a path a 422 naming `owner`, a NUL in a body's text a 422 naming its field, on
both backends (PostgreSQL refused a NUL in a query's parameter: a 500 `storage-error`, where
SQLite answered 404)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.integration.api.conftest import ONE_OFF, create, fields
from tocsin.store import Store

PROBLEM = "application/problem+json"
NOT_IDS = ["%00", "a%00bcdefghjkmnpqrstvwx", "06h46pkr2a7jv1nkr0gI", "x" * 300, "%F0%9F%94%94"]
WEBHOOK = {"kind": "webhook", "url": "https://example.com/hook"}


def _calls(
    reminder: str, contact: str, shared: str = ""
) -> list[tuple[str, str, dict[str, Any] | None]]:
    """Every route that takes a reminder's, a contact's or a list's id, with a body it would
    take."""
    shared = shared or contact
    return [
        ("GET", f"/v1/lists/{shared}", None),
        ("PATCH", f"/v1/lists/{shared}", {"name": "x"}),
        ("PUT", f"/v1/lists/{shared}/members/ben", {"role": "viewer"}),
        ("POST", f"/v1/lists/{shared}/members/ben/accept", None),
        ("DELETE", f"/v1/lists/{shared}/members/ben", None),
        ("GET", f"/v1/reminders/{reminder}", None),
        ("GET", f"/v1/reminders/{reminder}/firings", None),
        ("GET", f"/v1/reminders/{reminder}/occurrences", None),
        ("PATCH", f"/v1/reminders/{reminder}", {"text": "y"}),
        ("POST", f"/v1/reminders/{reminder}/snooze", {"snooze": "10m"}),
        ("DELETE", f"/v1/reminders/{reminder}", None),
        ("GET", f"/v1/owners/ana/contacts/{contact}", None),
        ("PATCH", f"/v1/owners/ana/contacts/{contact}", {"label": "x"}),
        ("DELETE", f"/v1/owners/ana/contacts/{contact}", None),
    ]


async def _ask(
    client: httpx.AsyncClient, method: str, path: str, body: dict[str, Any] | None
) -> httpx.Response:
    headers = {"If-Match": '"1"'}
    return await client.request(method, path, json=body, headers=headers)


def _problem(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, (response.request.url, response.text)
    assert response.headers["content-type"] == PROBLEM
    found: dict[str, Any] = response.json()
    return found


@pytest.mark.parametrize("not_an_id", NOT_IDS)
async def test_a_path_id_that_cannot_be_one_is_a_404(
    client: httpx.AsyncClient, store: Store, not_an_id: str
) -> None:
    made = await create(client, ONE_OFF)
    contact = (await client.post("/v1/owners/ana/contacts", json=WEBHOOK)).json()
    shared = (await client.post("/v1/lists", json={"name": "L", "owner": "ana"})).json()
    for method, path, body in _calls(not_an_id, not_an_id):
        assert _problem(await _ask(client, method, path, body), 404)["type"].endswith(":not-found")
    # The ids that are ids still answer.
    for method, path, body in _calls(made["id"], contact["id"], shared["id"]):
        response = await _ask(client, method, path, body)
        assert response.status_code < 400, (path, response.text)


@pytest.mark.parametrize(
    "path",
    [
        "/v1/owners/%00/contacts",
        "/v1/owners/%00/contacts/06h46pkr2a7jv1nkr0gn",
        "/v1/owners/%00/feed",
        "/v1/reminders?owner=%00",
        "/v1/reminders?owner=ana&cursor=%00",
        "/v1/owners/ana/contacts?cursor=%00",
        "/v1/lists?member=%00",
    ],
)
async def test_an_owner_or_a_cursor_with_a_nul_is_a_422_naming_it(
    client: httpx.AsyncClient, path: str
) -> None:
    named = "cursor" if "cursor" in path else "member" if "member" in path else "owner"
    assert fields(_problem(await client.get(path), 422)) == [named]


async def test_a_nul_in_a_body_is_a_422_naming_its_field(
    client: httpx.AsyncClient, store: Store
) -> None:
    made = await create(client, ONE_OFF)
    path = f"/v1/reminders/{made['id']}"
    with_nul: dict[tuple[str, str, str], dict[str, Any]] = {
        ("POST", "/v1/reminders", "text"): {**ONE_OFF, "text": "call\x00mom"},
        ("POST", "/v1/reminders", "metadata"): {**ONE_OFF, "metadata": {"k\x00": "v"}},
        ("POST", "/v1/reminders", "zone"): {**ONE_OFF, "zone": "UTC\x00"},
        ("PATCH", path, "text"): {"text": "a\x00"},
        ("POST", f"{path}/snooze", "snooze_until"): {"snooze_until": "tomorrow\x00"},
        ("POST", "/v1/occurrences", "repeat"): {"zone": "UTC", "repeat": "every day\x00"},
        ("POST", "/v1/owners/ana/contacts", "url"): {**WEBHOOK, "url": "https://e.com/\x00"},
        ("POST", "/v1/owners/ana/contacts", "label"): {**WEBHOOK, "label": "a\x00"},
        ("POST", "/v1/lists", "name"): {"name": "a\x00", "owner": "ana"},
        ("POST", "/v1/reminders", "assignee"): {**ONE_OFF, "assignee": "a\x00"},
        ("POST", "/v1/reminders", "list"): {**ONE_OFF, "list": "a\x00"},
        ("POST", "/v1/owners/ana/contacts", "subscription.endpoint"): {
            "kind": "webpush",
            "subscription": {"endpoint": "https://push.example.com/\x00", "keys": {}},
        },
    }
    for (method, at, field), body in with_nul.items():
        assert fields(_problem(await _ask(client, method, at, body), 422)) == [field], body

    items = [{**ONE_OFF, "text": "call\x00mom"}]
    batch = await client.post("/v1/reminders:batch", json={"items": items})
    assert batch.status_code == 200
    assert fields(batch.json()["items"][0]["problem"]) == ["items.0.text"]
    assert [r.id for r in await store.list_reminders("ana")] == [made["id"]]
    assert await store.list_contacts("ana") == []
