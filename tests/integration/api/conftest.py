"""Fixtures for the API tests: the real app over a real store, a fake clock, credentials."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from tocsin.api import create_app
from tocsin.auth import new_app, owner_token_secret, sign_owner_token
from tocsin.clock import FakeClock
from tocsin.settings import Settings
from tocsin.store import Store

# A Wednesday; the next Monday 09:00 in New York is 2026-10-26T13:00Z (still EDT).
NOW = datetime(2026, 10, 21, 12, 0, tzinfo=UTC)
ANA = {
    "owner": "ana",
    "text": "Water the plants",
    "repeat": "every Monday 09:00",
    "zone": "America/New_York",
    "channel": "log",
}
ONE_OFF = {
    "owner": "ana",
    "text": "Call mom",
    "at": "2026-10-21T18:00",
    "zone": "Europe/Lisbon",
    "channel": "log",
}


def settings(host: str = "127.0.0.1") -> Settings:
    return Settings(database_url="sqlite:///unused.db", host=host, secret=None)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(NOW)


@pytest.fixture
def app(store: Store, clock: FakeClock) -> FastAPI:
    return create_app(store=store, settings=settings(), clock=clock)


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        yield client


async def add_key(store: Store, name: str = "phone", webhook_url: str | None = None) -> str:
    """Create an app with an API key and return the key."""
    created, key = new_app(name, webhook_url=webhook_url, now=NOW)
    await store.add_app(created)
    return key


async def owner_token(store: Store, owner: str, *, ttl: timedelta = timedelta(days=1)) -> str:
    secret = await owner_token_secret(store, None)
    return sign_owner_token(owner, expires=NOW + ttl, secret=secret)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def fields(problem: dict[str, Any]) -> list[str]:
    """The fields a problem names, in order."""
    return [error["field"] for error in problem.get("errors", [])]


async def create(client: httpx.AsyncClient, body: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    response = await client.post("/v1/reminders", json=body, **kwargs)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created
