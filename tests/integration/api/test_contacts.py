"""`/v1/owners/{owner}/contacts`: add, list (keyset pages), read, change, delete; validation
as problem+json naming the field; app keys manage any owner's, owner tokens only their own."""

from __future__ import annotations

import httpx

from tests.integration.api.conftest import add_key, bearer, fields, owner_token
from tocsin.store import Store

HOOK = {"kind": "webhook", "url": "https://ana.example/hooks/tocsin", "label": "home"}
HOOK_ADDRESS = {"url": HOOK["url"]}


async def test_a_webhook_contact_is_added_with_its_secret_shown_once(
    client: httpx.AsyncClient,
) -> None:
    made = await client.post("/v1/owners/ana/contacts", json=HOOK)
    assert made.status_code == 201, made.text
    body = made.json()
    read = await client.get(f"/v1/owners/ana/contacts/{body['id']}")

    assert made.headers["location"] == f"/v1/owners/ana/contacts/{body['id']}"
    assert body["kind"] == "webhook"
    assert body["address"] == {"url": "https://ana.example/hooks/tocsin"}
    assert body["label"] == "home"
    assert body["secret"].startswith("whsec_")
    assert body["disabled_reason"] is None
    assert read.status_code == 200
    assert "secret" not in read.json()


async def test_bad_contacts_are_refused_naming_the_field(client: httpx.AsyncClient) -> None:
    cases = {
        "kind": {"kind": "carrier-pigeon"},
        "url": {"kind": "webhook", "url": "ftp://example.org/x"},
        "label": {"kind": "webhook", "url": "https://x.example", "label": "x" * 101},
    }
    for field, body in cases.items():
        answer = await client.post("/v1/owners/ana/contacts", json=body)
        assert answer.status_code == 422, (field, answer.text)
        assert answer.headers["content-type"] == "application/problem+json"
        assert field in fields(answer.json()) or field in answer.text, (field, answer.text)
    log = await client.post("/v1/owners/ana/contacts", json={"kind": "log"})
    assert log.status_code == 422
    assert fields(log.json()) == ["kind"]
    assert (await client.get("/v1/owners/ana/contacts")).json()["contacts"] == []


async def test_contacts_page_by_cursor_and_filter_by_kind(client: httpx.AsyncClient) -> None:
    made = [
        (await client.post("/v1/owners/ana/contacts", json={**HOOK, "label": f"n{n}"})).json()
        for n in range(3)
    ]
    first = (await client.get("/v1/owners/ana/contacts?limit=2")).json()
    second = (
        await client.get(f"/v1/owners/ana/contacts?limit=2&cursor={first['next_cursor']}")
    ).json()
    none_of_kind = (await client.get("/v1/owners/ana/contacts?kind=email")).json()

    ids = sorted(c["id"] for c in made)  # made in one millisecond: in id order
    assert [c["id"] for c in first["contacts"] + second["contacts"]] == ids
    assert second["next_cursor"] is None
    assert none_of_kind["contacts"] == []


async def test_a_contact_is_changed_and_deleted(client: httpx.AsyncClient) -> None:
    made = (await client.post("/v1/owners/ana/contacts", json=HOOK)).json()
    path = f"/v1/owners/ana/contacts/{made['id']}"

    relabelled = await client.patch(path, json={"label": "work"})
    moved = await client.patch(path, json={"url": "https://new.example/hook"})
    bad = await client.patch(path, json={"url": "nope"})
    gone = await client.delete(path)
    again = await client.delete(path)

    assert relabelled.json()["label"] == "work"
    assert moved.json()["address"] == {"url": "https://new.example/hook"}
    assert moved.json()["label"] == "work"
    assert bad.status_code == 422
    assert gone.status_code == 204
    assert again.status_code == 404
    assert (await client.get(path)).status_code == 404


async def test_an_owner_token_manages_its_own_contacts_only(
    client: httpx.AsyncClient, store: Store
) -> None:
    key = await add_key(store)
    token = await owner_token(store, "ana")
    bobs = (await client.post("/v1/owners/bob/contacts", json=HOOK, headers=bearer(key))).json()

    own = await client.post("/v1/owners/ana/contacts", json=HOOK, headers=bearer(token))
    other = await client.post("/v1/owners/bob/contacts", json=HOOK, headers=bearer(token))
    peek = await client.get(f"/v1/owners/bob/contacts/{bobs['id']}", headers=bearer(token))
    across = await client.get(f"/v1/owners/ana/contacts/{bobs['id']}", headers=bearer(token))
    listed = await client.get("/v1/owners/bob/contacts", headers=bearer(key))

    assert own.status_code == 201
    assert other.status_code == 404
    assert peek.status_code == 404
    assert across.status_code == 404  # a contact is found under its own owner only
    assert [c["id"] for c in listed.json()["contacts"]] == [bobs["id"]]


async def test_a_webhook_contact_must_be_a_public_url(client: httpx.AsyncClient) -> None:
    for url in ("http://169.254.169.254/latest", "http://127.0.0.1:9/x", "http://[::1]/x"):
        answer = await client.post("/v1/owners/ana/contacts", json={"kind": "webhook", "url": url})
        assert answer.status_code == 422, url
        assert fields(answer.json()) == ["url"]
        assert "TOCSIN_ALLOW_PRIVATE_URLS" in answer.text


async def test_hosts_the_client_would_fold_into_a_private_address_are_refused(
    client: httpx.AsyncClient,
) -> None:
    """The host checked is the one the HTTP client connects to: Unicode digits and dots,
    legacy IPv4 forms and IPv6 forms that carry an IPv4 address are judged as that address."""
    for url in (
        "http://①②⑦.0.0.1:9/k",
        "http://１２７.0.0.1/k",
        "http://127。0。0。1/k",
        "http://①⑥⑨.②⑤④.①⑥⑨.②⑤④/latest",
        "http://2130706433/k",
        "http://[2002:7f00:1::]/k",
        "http://[64:ff9b::a9fe:a9fe]/k",
        "http://[::127.0.0.1]/k",
    ):
        answer = await client.post("/v1/owners/ana/contacts", json={"kind": "webhook", "url": url})
        assert answer.status_code == 422, (url, answer.text)
        assert fields(answer.json()) == ["url"]
    assert (await client.get("/v1/owners/ana/contacts")).json()["contacts"] == []


async def test_a_malformed_url_is_a_clear_422_on_add_and_change(client: httpx.AsyncClient) -> None:
    made = (await client.post("/v1/owners/ana/contacts", json=HOOK)).json()
    for url in ("http://[x]/", "http://[::1", "http://exa mple.org/"):
        added = await client.post("/v1/owners/ana/contacts", json={"kind": "webhook", "url": url})
        changed = await client.patch(f"/v1/owners/ana/contacts/{made['id']}", json={"url": url})
        for answer in (added, changed):
            assert answer.status_code == 422, (url, answer.text)
            assert answer.headers["content-type"] == "application/problem+json"
            assert fields(answer.json()) == ["url"]
    read = await client.get(f"/v1/owners/ana/contacts/{made['id']}")
    assert read.json()["address"] == HOOK_ADDRESS
