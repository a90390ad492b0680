"""Feed tickets: what a page's `EventSource` (which cannot send headers) opens the in-app
feed with. Who may get one, what one opens, and what it does not: another owner's feed, any
other route, a minute after it was made, after its owner's tokens were revoked, after dev
mode for one made in it. (A ticket opening the feed in a real browser: tests/e2e/test_page.py;
a revocation ending the feeds open: tests/e2e/test_feed_access.py.)"""

from __future__ import annotations

import base64
import hashlib
import hmac
from datetime import datetime, timedelta

import httpx
import pytest
from fastapi import FastAPI

from tests.integration.api.conftest import NOW, add_key, bearer, owner_token
from tocsin.api.problems import Problem
from tocsin.api.security import KEY_TTL, OPEN_TTL, Authenticator
from tocsin.auth import FEED_TICKET_SECONDS, owner_token_secret, sign_feed_ticket
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


async def test_a_ticket_signed_before_its_owners_tokens_were_revoked_is_refused(
    client: httpx.AsyncClient, store: Store, clock: FakeClock
) -> None:
    await add_key(store)
    ticket = await ticket_for(client, "ana", await owner_token(store, "ana"))
    await store.revoke_owner_tokens("ana", NOW + timedelta(milliseconds=1))
    clock.advance(KEY_TTL)  # what the process read about revocations may be kept that long

    refused = await client.get("/v1/owners/ana/feed", params={"ticket": ticket})

    assert refused.status_code == 401
    assert refused.json()["detail"] == "the feed ticket has been revoked: ask for a new one"


def _old_ticket(owner: str, *, expires: datetime, secret: str) -> str:
    """A ticket of the form before tickets said when they were signed."""
    expiry = str(int(expires.timestamp()))
    message = b"\n".join((b"tocsin-feed-ticket-v1", owner.encode(), expiry.encode()))
    digest = hmac.new(secret.encode(), message, hashlib.sha256).digest()
    encoded = base64.urlsafe_b64encode(owner.encode()).rstrip(b"=").decode()
    return f"tf_{encoded}.{expiry}.{base64.urlsafe_b64encode(digest).rstrip(b'=').decode()}"


async def test_a_ticket_of_the_old_form_works_until_any_revocation_of_its_owner(
    app: FastAPI, store: Store, clock: FakeClock
) -> None:
    auth: Authenticator = app.state.tocsin.auth
    secret = await owner_token_secret(store, None)
    old = _old_ticket("ana", expires=NOW + timedelta(seconds=30), secret=secret)

    assert (await auth.authenticate_ticket(old)).owner == "ana"
    await store.revoke_owner_tokens("ana", NOW - timedelta(days=365))
    clock.advance(KEY_TTL)
    with pytest.raises(Problem) as refused:
        await auth.authenticate_ticket(old)
    assert refused.value.status == 401


async def test_a_ticket_made_in_dev_mode_ends_with_dev_mode(
    client: httpx.AsyncClient, store: Store, clock: FakeClock
) -> None:
    made = await client.post("/v1/owners/ana/feed/tickets")  # no key exists: anyone may
    assert made.status_code == 201, made.text
    await add_key(store)
    clock.advance(OPEN_TTL)

    refused = await client.get("/v1/owners/ana/feed", params={"ticket": made.json()["ticket"]})

    assert refused.status_code == 401
    assert "works only while the server runs on loopback" in refused.json()["detail"]
