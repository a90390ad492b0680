"""`/v1/owners/{owner}/contacts`: add, list (keyset pages), read, change, delete; validation
as problem+json naming the field. Apps are tenants: an app key manages the contacts it saved,
of any owner; an owner token every contact of its own owner; an admin key all."""

from __future__ import annotations

from collections.abc import Awaitable

import httpx

from tests.integration.api.conftest import NOW, add_key, bearer, fields, owner_token, settings
from tocsin.api import create_app
from tocsin.auth import new_app
from tocsin.clock import FakeClock
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
    assert own.json()["source"] is None  # saved by the owner himself
    assert bobs["source"] == "phone"
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


async def test_an_app_sees_and_changes_only_the_contacts_it_saved(
    client: httpx.AsyncClient, store: Store
) -> None:
    x, y, token = (
        await add_key(store, "x"),
        await add_key(store, "y"),
        await owner_token(store, "ana"),
    )
    created, admin = new_app("ops", webhook_url=None, now=NOW, admin=True)
    await store.add_app(created)
    xs = (await client.post("/v1/owners/ana/contacts", json=HOOK, headers=bearer(x))).json()
    own = (await client.post("/v1/owners/ana/contacts", json=HOOK, headers=bearer(token))).json()
    path = f"/v1/owners/ana/contacts/{xs['id']}"

    def listed(credential: str) -> Awaitable[httpx.Response]:
        return client.get("/v1/owners/ana/contacts", headers=bearer(credential))

    seen = {
        name: [c["id"] for c in (await listed(c)).json()["contacts"]]
        for name, c in {"x": x, "y": y, "ana": token, "admin": admin}.items()
    }
    y_reads = await client.get(path, headers=bearer(y))
    y_changes = await client.patch(path, json={"url": "https://y.example/steal"}, headers=bearer(y))
    y_deletes = await client.delete(path, headers=bearer(y))
    x_reads_owners = await client.get(f"/v1/owners/ana/contacts/{own['id']}", headers=bearer(x))
    owner_deletes = await client.delete(path, headers=bearer(token))

    assert seen == {
        "x": [xs["id"]],
        "y": [],
        "ana": sorted([xs["id"], own["id"]]),
        "admin": sorted([xs["id"], own["id"]]),
    }
    assert (y_reads.status_code, y_changes.status_code, y_deletes.status_code) == (404, 404, 404)
    assert x_reads_owners.status_code == 404  # the owner's own Web Push keys are his
    assert owner_deletes.status_code == 204


async def test_each_app_saves_at_most_the_cap_of_contacts_for_an_owner(store: Store) -> None:
    capped = settings().model_copy(update={"max_contacts_per_owner": 2})
    app = create_app(store=store, settings=capped, clock=FakeClock(NOW))
    x, y = await add_key(store, "x"), await add_key(store, "y")
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        answers = [
            await client.post("/v1/owners/ana/contacts", json=HOOK, headers=bearer(x))
            for _ in range(3)
        ]
        other_app = await client.post("/v1/owners/ana/contacts", json=HOOK, headers=bearer(y))
        other_owner = await client.post("/v1/owners/bob/contacts", json=HOOK, headers=bearer(x))

    assert [a.status_code for a in answers] == [201, 201, 409]
    assert answers[2].headers["content-type"] == "application/problem+json"
    assert "TOCSIN_MAX_CONTACTS_PER_OWNER" in answers[2].json()["detail"]
    assert (other_app.status_code, other_owner.status_code) == (201, 201)


async def test_apprise_urls_are_judged_by_where_their_service_connects(
    client: httpx.AsyncClient,
) -> None:
    """Apprise URLs are not http(s): each is held to the outbound policy at the host its
    service reaches, and a service whose connections Tocsin cannot see is refused."""
    accepted = [
        "ntfys://ntfy.sh/plants",
        "ntfy://plants",
        "json://ana:s3cret@hooks.example.com/tocsin",
        "tgram://123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/12315544",
    ]
    refused = [
        "json://ana:s3cret@127.0.0.1:9/tocsin",
        "ntfys://localhost/plants",
        "xml://169.254.169.254/latest",
        "mailto://ana:s3cret@example.com?smtp=10.0.0.25",
        "rsyslog://syslog.example.com",
    ]
    for url in accepted:
        answer = await client.post("/v1/owners/ana/contacts", json={"kind": "apprise", "url": url})
        assert answer.status_code == 201, (url, answer.text)
    for url in refused:
        answer = await client.post("/v1/owners/ana/contacts", json={"kind": "apprise", "url": url})
        assert answer.status_code == 422, (url, answer.text)
        assert fields(answer.json()) == ["url"]
        assert "TOCSIN_ALLOW_PRIVATE_URLS" in answer.text
        assert "s3cret" not in answer.text
    listed = (await client.get("/v1/owners/ana/contacts?kind=apprise")).json()["contacts"]
    assert sorted(c["address"]["url"] for c in listed) == sorted(accepted)
