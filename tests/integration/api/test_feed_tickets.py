"""Feed tickets: what a page's `EventSource` (which cannot send headers) opens the in-app
feed with. Who may get one, what one opens, and what it does not: another owner's feed, any
other route, a minute after it was made. (A ticket opening the feed in a real browser:
tests/e2e/test_page.py.)"""

from __future__ import annotations

from datetime import timedelta

import httpx

from tests.integration.api.conftest import NOW, add_key, bearer, owner_token
from tocsin.auth import FEED_TICKET_SECONDS, sign_feed_ticket
from tocsin.clock import FakeClock
from tocsin.store import Store


async def ticket_for(client: httpx.AsyncClient, owner: str, token: str) -> str:
    made = await client.post(f"/v1/owners/{owner}/feed/tickets", headers=bearer(token))
    assert made.status_code == 201, made.text
    body = made.json()
    expires = (NOW + timedelta(seconds=FEED_TICKET_SECONDS)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert body["expires"] == expires
    ticket: str = body["ticket"]
    assert ticket.startswith("tf_")
    return ticket


async def test_a_ticket_is_for_the_owner_of_the_token(
    client: httpx.AsyncClient, store: Store
) -> None:
    ana = await owner_token(store, "ana")
    await ticket_for(client, "ana", ana)
    other = await client.post("/v1/owners/bob/feed/tickets", headers=bearer(ana))
    assert other.status_code == 404
    assert other.headers["content-type"] == "application/problem+json"


async def test_an_app_key_gets_no_ticket(client: httpx.AsyncClient, store: Store) -> None:
    key = await add_key(store)
    refused = await client.post("/v1/owners/ana/feed/tickets", headers=bearer(key))
    assert refused.status_code == 403
    assert "Authorization header" in refused.json()["detail"]


async def test_a_ticket_opens_no_other_feed_nor_any_other_route(
    client: httpx.AsyncClient, store: Store
) -> None:
    await add_key(store)  # not loopback dev mode: every request must prove who sent it
    ticket = await ticket_for(client, "ana", await owner_token(store, "ana"))
    other = await client.get("/v1/owners/bob/feed", params={"ticket": ticket})
    assert other.status_code == 404
    as_bearer = await client.get("/v1/reminders", headers=bearer(ticket))
    assert as_bearer.status_code == 401
    as_query = await client.get("/v1/reminders", params={"ticket": ticket})
    assert as_query.status_code == 401


async def test_a_ticket_ends_after_a_minute_and_cannot_be_forged(
    client: httpx.AsyncClient, store: Store, clock: FakeClock
) -> None:
    await add_key(store)
    token = await owner_token(store, "ana")
    ticket = await ticket_for(client, "ana", token)
    forged, _ = sign_feed_ticket("ana", now=NOW, secret="a guess")
    for wrong in (forged, token, "tf_x"):  # an owner token is no ticket either
        refused = await client.get("/v1/owners/ana/feed", params={"ticket": wrong})
        assert refused.status_code == 401, wrong
        assert "feed ticket" in refused.json()["detail"]
    clock.advance(timedelta(seconds=FEED_TICKET_SECONDS))
    expired = await client.get("/v1/owners/ana/feed", params={"ticket": ticket})
    assert expired.status_code == 401
