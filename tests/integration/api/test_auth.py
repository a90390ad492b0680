"""API keys, owner tokens and loopback mode."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from tests.integration.api.conftest import (
    ANA,
    NOW,
    ONE_OFF,
    add_key,
    bearer,
    create,
    fields,
    owner_token,
    settings,
)
from tocsin.api import create_app
from tocsin.api.problems import Problem
from tocsin.api.security import ANONYMOUS, KEY_TTL, OPEN_TTL, Authenticator
from tocsin.auth import hash_api_key, new_app, sign_owner_token, verify_owner_token
from tocsin.cli.demo import DEMO_OWNER, demo_link
from tocsin.clock import FakeClock
from tocsin.domain import App
from tocsin.store import Store


async def test_without_keys_loopback_accepts_anyone(client: httpx.AsyncClient) -> None:
    made = await create(client, ANA)

    assert made["source"] is None


async def test_once_a_key_exists_a_key_is_required(
    client: httpx.AsyncClient, store: Store, clock: FakeClock
) -> None:
    await create(client, ANA)
    key = await add_key(store, "phone")
    clock.advance(OPEN_TTL)  # "no key exists" may be believed that long after the first key

    missing = await client.post("/v1/reminders", json=ANA)
    wrong = await client.get("/v1/reminders", params={"owner": "ana"}, headers=bearer("tk_nope"))
    basic = await client.get("/v1/reminders", headers={"Authorization": "Basic YWxpY2U6"})
    good = await client.post("/v1/reminders", json=ANA, headers=bearer(key))

    for refused in (missing, wrong, basic):
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"].startswith("Bearer")
        assert refused.headers["content-type"] == "application/problem+json"
    assert good.status_code == 201
    assert good.json()["source"] == "phone"


async def test_without_a_key_the_body_is_not_judged(
    client: httpx.AsyncClient, store: Store
) -> None:
    await add_key(store, "phone")

    for path in ("/v1/reminders", "/v1/reminders:batch"):
        for body in (b"", b"[]", b'{"owner": 7}', b'{"items": []}'):
            response = await client.post(
                path, content=body, headers={"content-type": "application/json"}
            )

            assert response.status_code == 401, (path, body, response.text)


async def test_beyond_loopback_no_key_means_no_entry(store: Store, clock: FakeClock) -> None:
    app = create_app(store=store, settings=settings(host="192.0.2.10"), clock=clock)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1"
    ) as client:
        response = await client.post("/v1/reminders", json=ANA)

    assert response.status_code == 401


async def test_keys_are_stored_hashed(store: Store) -> None:
    key = await add_key(store, "phone", webhook_url="https://example.com/hook")

    app = await store.find_app(key_hash=hash_api_key(key))

    assert app is not None
    assert key not in (app.key_hash, app.key_prefix)
    assert key.startswith("tk_")
    assert key.startswith(app.key_prefix)
    assert app.webhook_secret is not None
    assert app.webhook_secret.startswith("whsec_")


async def test_an_owner_token_sees_only_its_owner(client: httpx.AsyncClient, store: Store) -> None:
    key = await add_key(store)
    bobs = await create(client, {**ONE_OFF, "owner": "bob"}, headers=bearer(key))
    token = bearer(await owner_token(store, "ana"))

    mine = await client.post(
        "/v1/reminders", json={k: v for k, v in ANA.items() if k != "owner"}, headers=token
    )
    assert mine.status_code == 201
    assert mine.json()["owner"] == "ana"
    assert mine.json()["source"] is None
    listed = await client.get("/v1/reminders", headers=token)
    assert [r["id"] for r in listed.json()["reminders"]] == [mine.json()["id"]]

    path = f"/v1/reminders/{bobs['id']}"
    edit_headers = {**token, "If-Match": "*"}
    attempts: list[tuple[str, dict[str, Any] | None, dict[str, str]]] = [
        ("GET", None, token),
        ("DELETE", None, token),
        ("PATCH", {"snooze": "10m"}, token),
        ("PATCH", {"text": "mine now"}, edit_headers),
    ]
    for method, body, headers in attempts:
        response = await client.request(method, path, json=body, headers=headers)
        assert response.status_code == 404, method
    for sub in ("occurrences", "firings"):
        assert (await client.get(f"{path}/{sub}", headers=token)).status_code == 404
    assert (await client.get(path, headers=bearer(key))).json()["text"] == bobs["text"]


async def test_an_owner_token_cannot_act_for_another_owner(
    client: httpx.AsyncClient, store: Store
) -> None:
    token = bearer(await owner_token(store, "ana"))

    post = await client.post("/v1/reminders", json={**ANA, "owner": "bob"}, headers=token)
    listing = await client.get("/v1/reminders", params={"owner": "bob"}, headers=token)
    batch = await client.post(
        "/v1/reminders:batch", json={"items": [{**ANA, "owner": "bob"}]}, headers=token
    )

    assert post.status_code == 403
    assert fields(post.json()) == ["owner"]
    assert listing.status_code == 403
    assert batch.json()["items"][0]["status"] == "invalid"
    assert fields(batch.json()["items"][0]["problem"]) == ["items.0.owner"]


async def test_expired_or_forged_owner_tokens_are_refused(
    client: httpx.AsyncClient, store: Store
) -> None:
    await add_key(store)
    expired = await owner_token(store, "ana", ttl=timedelta(seconds=-1))
    forged = sign_owner_token("ana", expires=NOW + timedelta(days=1), secret="guess")

    for token in (expired, forged, "to_garbage", "to_YW5h.1.x"):
        response = await client.get("/v1/reminders", headers=bearer(token))
        assert response.status_code == 401, token


async def test_an_api_key_must_name_the_owner(client: httpx.AsyncClient, store: Store) -> None:
    key = await add_key(store)

    response = await client.get("/v1/reminders", headers=bearer(key))

    assert response.status_code == 422
    assert fields(response.json()) == ["owner"]


@pytest.mark.parametrize("owner", ["ana", "x@y.z", "team:42", "a" * 128])
def test_owner_tokens_round_trip(owner: str) -> None:
    token = sign_owner_token(owner, expires=NOW + timedelta(hours=1), secret="s")

    assert verify_owner_token(token, secret="s", now=NOW) == owner
    assert verify_owner_token(token, secret="other", now=NOW) is None
    assert verify_owner_token(token, secret="s", now=NOW + timedelta(hours=2)) is None


class CountingStore:
    """The store, counting the lookups the authenticator makes."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.calls: list[str] = []

    async def count_apps(self) -> int:
        self.calls.append("count_apps")
        return await self.store.count_apps()

    async def find_app(self, *, key_hash: str) -> App | None:
        self.calls.append("find_app")
        return await self.store.find_app(key_hash=key_hash)


def authenticator(store: Store, clock: FakeClock) -> tuple[Authenticator, CountingStore]:
    counting = CountingStore(store)
    auth = Authenticator(counting, clock, secret="s", open_allowed=True)  # type: ignore[arg-type]
    return auth, counting


async def test_a_known_key_is_looked_up_once_per_ttl(store: Store, clock: FakeClock) -> None:
    key = await add_key(store, "phone")
    auth, counting = authenticator(store, clock)

    first = await auth.authenticate(f"Bearer {key}")
    again = await auth.authenticate(f"Bearer {key}")
    clock.advance(KEY_TTL)
    later = await auth.authenticate(f"Bearer {key}")

    assert first == again == later
    assert first.source == "phone"
    assert counting.calls == ["find_app", "find_app"]


async def test_an_unknown_key_is_never_cached(store: Store, clock: FakeClock) -> None:
    auth, counting = authenticator(store, clock)
    created, key = new_app("late", webhook_url=None, now=NOW)

    with pytest.raises(Problem) as refused:
        await auth.authenticate(f"Bearer {key}")
    await store.add_app(created)
    accepted = await auth.authenticate(f"Bearer {key}")

    assert refused.value.status == 401
    assert accepted.source == "late"
    assert counting.calls == ["find_app", "find_app"]


async def test_open_mode_is_rechecked_after_a_second(store: Store, clock: FakeClock) -> None:
    auth, counting = authenticator(store, clock)

    assert await auth.authenticate(None) == ANONYMOUS
    assert await auth.authenticate(None) == ANONYMOUS
    await add_key(store, "phone")
    clock.advance(OPEN_TTL)
    with pytest.raises(Problem) as refused:
        await auth.authenticate(None)
    with pytest.raises(Problem):
        await auth.authenticate(None)

    assert refused.value.status == 401
    assert counting.calls == ["count_apps", "count_apps"]  # closed for good once keys exist


async def _demo_token(store: Store) -> str:
    link = await demo_link(store, settings())
    assert link is not None
    return link.rpartition("#token=")[2]


async def test_the_demo_token_works_in_dev_mode_only(
    client: httpx.AsyncClient, store: Store, clock: FakeClock
) -> None:
    """The token of `tocsin serve`'s sign-in link ends once an API key exists; an ordinary
    token of the same owner does not; and beyond loopback it never worked."""
    demo = bearer(await _demo_token(store))
    ordinary = bearer(await owner_token(store, DEMO_OWNER))
    assert (await client.get("/v1/reminders", headers=demo)).status_code == 200

    await add_key(store)
    clock.advance(OPEN_TTL)
    refused = await client.get("/v1/reminders", headers=demo)

    assert refused.status_code == 401
    assert refused.json()["detail"] == (
        "the demo token (and a feed ticket made in dev mode) works only while the server runs "
        "on loopback without API keys: sign an owner token with `tocsin keys owner-token`"
    )
    assert (await client.get("/v1/reminders", headers=ordinary)).status_code == 200
    assert await demo_link(store, settings()) is None


async def test_the_demo_token_is_refused_beyond_loopback(store: Store, clock: FakeClock) -> None:
    demo = bearer(await _demo_token(store))
    app = create_app(store=store, settings=settings(host="192.0.2.10"), clock=clock)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1"
    ) as client:
        response = await client.get("/v1/reminders", headers=demo)

    assert response.status_code == 401


async def test_revoking_the_demo_owner_refuses_the_demo_token(
    client: httpx.AsyncClient, store: Store, clock: FakeClock
) -> None:
    demo = bearer(await _demo_token(store))
    assert (await client.get("/v1/reminders", headers=demo)).status_code == 200

    await store.revoke_owner_tokens(DEMO_OWNER, datetime.now(UTC))
    clock.advance(KEY_TTL)
    refused = await client.get("/v1/reminders", headers=demo)

    assert refused.status_code == 401
    assert refused.json()["detail"] == "the owner token has been revoked: ask for a new one"
