"""Which channels can deliver for an owner: `GET /v1/owners/{owner}/channels`, and the
`warnings` of a create or an edit on one that cannot (no webhook URL, no contact of its
kind), on both backends."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.integration.api.conftest import ANA, add_key, bearer, create, owner_token, settings
from tests.integration.api.test_changes import patch
from tocsin.api import create_app
from tocsin.clock import FakeClock
from tocsin.settings import Settings
from tocsin.store import Store

EMAIL = {"smtp_host": "127.0.0.1", "smtp_from": "r@x.org"}  # a sender opens nothing until it sends


async def _client(store: Store, clock: FakeClock, config: Settings) -> httpx.AsyncClient:
    app = create_app(store=store, settings=config, clock=clock)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1")


@pytest.fixture
async def dev(store: Store, clock: FakeClock) -> AsyncIterator[httpx.AsyncClient]:
    """Loopback dev mode with email configured and no webhook URL anywhere."""
    async with await _client(store, clock, settings().model_copy(update=EMAIL)) as client:
        yield client


def _readiness(answer: httpx.Response) -> dict[str, tuple[bool, bool, str | None]]:
    assert answer.status_code == 200, answer.text
    return {
        c["channel"]: (c["configured"], c["ready"], c["reason"]) for c in answer.json()["channels"]
    }


async def test_the_page_learns_what_can_ring_and_a_webhook_without_url_is_warned(
    dev: httpx.AsyncClient,
) -> None:
    found = _readiness(await dev.get("/v1/owners/ana/channels"))

    assert found["inapp"] == (True, True, None)
    assert found["log"] == (True, True, None)
    configured, ready, why = found["webhook"]
    assert (configured, ready) == (True, False)
    assert why is not None
    assert "no webhook URL" in why
    assert found["email"][:2] == (True, False)
    assert found["sms"][:2] == (False, False)

    made = await create(dev, {**ANA, "channel": "webhook"})
    assert [w["field"] for w in made["warnings"]] == ["channel"]
    assert "no webhook URL" in made["warnings"][0]["message"]
    quiet = await create(dev, ANA)  # log always has a destination
    assert "warnings" not in quiet


async def test_a_contact_makes_its_channel_ready_and_an_edit_is_warned_too(
    dev: httpx.AsyncClient,
) -> None:
    made = await create(dev, ANA)
    edited = await patch(dev, made["id"], {"channel": "email"}, '"1"')
    assert edited.status_code == 200
    assert "ana has no email contact" in edited.json()["warnings"][0]["message"]

    added = await dev.post("/v1/owners/ana/contacts", json={"kind": "email", "address": "a@x.org"})
    assert added.status_code == 201
    assert _readiness(await dev.get("/v1/owners/ana/channels"))["email"] == (True, True, None)
    again = await patch(dev, made["id"], {"text": "Water them"}, '"2"')
    assert "warnings" not in again.json()


async def test_an_apps_webhook_url_or_the_servers_makes_webhook_ready(
    store: Store, clock: FakeClock
) -> None:
    hooked = await add_key(store, "phone", webhook_url="https://hooks.example.com/t")
    bare = await add_key(store, "watch")
    async with await _client(store, clock, settings()) as client:
        body: dict[str, Any] = {**ANA, "channel": "webhook"}
        with_url = await create(client, body, headers=bearer(hooked))
        without = await create(client, body, headers=bearer(bare))
        asked = await client.get("/v1/owners/ana/channels", headers=bearer(bare))

    assert "warnings" not in with_url
    assert "app watch has no webhook URL" in without["warnings"][0]["message"]
    assert _readiness(asked)["webhook"][1] is False

    server_wide = settings().model_copy(update={"webhook_url": "https://hooks.example.com/all"})
    async with await _client(store, clock, server_wide) as client:
        made = await create(client, body, headers=bearer(bare))
        assert "warnings" not in made
        assert _readiness(await client.get("/v1/owners/ana/channels", headers=bearer(bare)))[
            "webhook"
        ] == (True, True, None)


async def test_an_owner_token_asks_for_its_own_owner_only(store: Store, clock: FakeClock) -> None:
    await add_key(store)  # keys exist: the token is what lets the caller in
    token = await owner_token(store, "ana")
    async with await _client(store, clock, settings()) as client:
        own = await client.get("/v1/owners/ana/channels", headers=bearer(token))
        other = await client.get("/v1/owners/bob/channels", headers=bearer(token))

    assert own.status_code == 200
    assert other.status_code == 404
