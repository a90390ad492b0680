"""A running Tocsin for end-to-end tests: `tocsin serve` on SQLite (one process), or
`tocsin api` + `tocsin worker` on PostgreSQL, and the HTTP calls the tests make to it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from tests.e2e.workers import workers
from tests.integration.engine.support import Receiver
from tests.support.processes import clean_env, running


@contextmanager
def service(
    kind: str, folder: Path, pg_url: str, sink: Receiver, settings: dict[str, str]
) -> Iterator[str]:
    """The base URL of a running service of `kind` with `settings` (`TOCSIN_…`), ringing
    webhooks into `sink`."""
    settings = settings | {"TOCSIN_WEBHOOK_URL": sink.url}
    with ExitStack() as stack:
        if kind == "sqlite":
            db = str(folder / "tocsin.db")
            base, _ = stack.enter_context(
                running("serve", "--db", db, env=clean_env(**settings), log=folder / "serve.log")
            )
        else:
            started = stack.enter_context(workers(folder))
            started.start(pg_url, "w1", env=settings)
            base, _ = stack.enter_context(
                running("api", "--db", pg_url, env=clean_env(**settings), log=folder / "api.log")
            )
        yield base


def logs(folder: Path) -> str:
    return "".join(path.read_text() for path in folder.glob("*.log"))


def create(client: httpx.Client, **fields: Any) -> dict[str, Any]:
    body = {"owner": "ana", "zone": "Europe/Paris", "channel": "log"}
    response = client.post("/v1/reminders", json=body | fields)
    assert response.status_code == 201, response.text
    made: dict[str, Any] = response.json()
    return made


def edit(client: httpx.Client, made: dict[str, Any], **fields: Any) -> dict[str, Any]:
    path = f"/v1/reminders/{made['id']}"
    etag = client.get(path).headers["ETag"]
    response = client.patch(path, json=fields, headers={"If-Match": etag})
    assert response.status_code == 200, response.text
    edited: dict[str, Any] = response.json()
    return edited


def firings(client: httpx.Client, made: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = client.get(f"/v1/reminders/{made['id']}/firings").json()[
        "firings"
    ]
    return found


async def acreate(client: httpx.AsyncClient, **fields: Any) -> dict[str, Any]:
    """`create` from an async client, ringing by webhook in UTC unless `fields` say."""
    body = {"owner": "ana", "zone": "UTC", "channel": "webhook"} | fields
    response = await client.post("/v1/reminders", json=body)
    assert response.status_code == 201, response.text
    made: dict[str, Any] = response.json()
    return made


async def afirings(client: httpx.AsyncClient, made: dict[str, Any]) -> list[dict[str, Any]]:
    """`firings` from an async client: newest first."""
    answer = await client.get(f"/v1/reminders/{made['id']}/firings")
    found: list[dict[str, Any]] = answer.json()["firings"]
    return found


def iso(instant: datetime) -> str:
    return instant.strftime("%Y-%m-%dT%H:%M:%SZ")


def sleep_until(instant: datetime) -> None:
    time.sleep(max(0.0, (instant - datetime.now(UTC)).total_seconds()))


def late(firing: dict[str, Any]) -> float:
    sent = datetime.fromisoformat(firing["sent_at"])
    return (sent - datetime.fromisoformat(firing["due"])).total_seconds()
