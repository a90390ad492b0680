"""`GET /v1/status` and the `/status` page: who may read them, and what the board says about
real rows (workers, minutes ahead, the last hour's rings, queue, breakers)."""

from __future__ import annotations

from datetime import timedelta

import httpx
from fastapi import FastAPI

from tests.integration.api.conftest import NOW, add_key, bearer, owner_token
from tests.integration.store.factories import LEASE, claim, reminder, result
from tocsin.auth import new_app
from tocsin.clock import FakeClock
from tocsin.domain import FiringState, Outcome
from tocsin.statusboard.board import KEEP_SECONDS, MINUTES
from tocsin.store import Store
from tocsin.time import format_utc

PROBLEM = "application/problem+json"


async def test_in_loopback_dev_mode_anyone_here_reads_the_board(client: httpx.AsyncClient) -> None:
    response = await client.get("/v1/status")

    assert response.status_code == 200
    board = response.json()
    assert board["as_of"] == format_utc(NOW)
    assert board["workers"] == []
    assert board["breakers"] == []
    assert [m["minute"] for m in board["ahead"]["minutes"]][:2] == [
        "2026-10-21T12:00:00Z",
        "2026-10-21T12:01:00Z",
    ]
    assert len(board["ahead"]["minutes"]) == len(board["rings"]["minutes"]) == MINUTES
    assert board["rings"]["minutes"][-1]["minute"] == "2026-10-21T12:00:00Z"
    assert board["queue"] == {"cap": 100_000, "queued": 0, "sending": 0, "quiet": 0}


async def test_only_an_admin_key_reads_the_board_once_keys_exist(
    client: httpx.AsyncClient, store: Store
) -> None:
    app_key = await add_key(store)
    admin, admin_key = new_app("ops", webhook_url=None, now=NOW, admin=True)
    await store.add_app(admin)
    token = await owner_token(store, "ana")

    anonymous = await client.get("/v1/status")
    by_app = await client.get("/v1/status", headers=bearer(app_key))
    by_owner = await client.get("/v1/status", headers=bearer(token))
    by_admin = await client.get("/v1/status", headers=bearer(admin_key))

    assert anonymous.status_code == 401
    for refused in (by_app, by_owner):
        assert refused.status_code == 403
        assert refused.headers["content-type"] == PROBLEM
        assert "admin key" in refused.json()["detail"]
    assert by_admin.status_code == 200


async def test_the_board_counts_what_the_store_holds(
    client: httpx.AsyncClient, store: Store, clock: FakeClock
) -> None:
    ahead = [NOW + timedelta(minutes=2, seconds=s) for s in (1, 2, 3)] + [NOW - timedelta(hours=2)]
    await store.add_reminders([reminder(f"a{n}", due_at=at) for n, at in enumerate(ahead)])
    rang = [
        reminder(f"r{n}", due_at=NOW - timedelta(minutes=5) + timedelta(seconds=n))
        for n in range(4)
    ]
    await store.add_reminders(rang)
    firings = await store.claim([claim(r) for r in rang], sender="worker-1", now=NOW, lease=LEASE)
    by_due = sorted(firings, key=lambda f: f.due_at)
    await store.record_attempts(
        [result(f, at=f.due_at + timedelta(seconds=n + 1)) for n, f in enumerate(by_due[:3])]
        + [result(by_due[3], state=FiringState.FAILED, outcome=Outcome.FAILED, error="no")]
    )
    await store.renew_leases("worker-1", parts=2, ttl=timedelta(seconds=10), breakers=["sms"])

    board = (await client.get("/v1/status")).json()

    assert board["ahead"]["minutes"][2] == {"minute": "2026-10-21T12:02:00Z", "due": 3}
    assert sum(m["due"] for m in board["ahead"]["minutes"]) == 3
    assert board["ahead"]["overdue"] == 1
    minute = board["rings"]["minutes"][-6]
    assert minute["minute"] == "2026-10-21T11:55:00Z"
    assert (minute["sent"], minute["failed"], minute["waiting"]) == (3, 1, 0)
    assert minute["lateness"] == {"p50": 2.0, "p99": 3.0, "max": 3.0}
    assert sum(m["sent"] for m in board["rings"]["minutes"]) == 3
    [worker] = board["workers"]
    assert worker["id"] == "worker-1"
    assert worker["parts"] == [0, 1]
    assert worker["breakers"] == ["sms"]
    assert board["breakers"] == [{"worker": "worker-1", "provider": "sms"}]


async def test_the_board_is_kept_a_moment(
    client: httpx.AsyncClient, store: Store, clock: FakeClock
) -> None:
    first = (await client.get("/v1/status")).json()
    await store.add_reminders([reminder(due_at=NOW + timedelta(minutes=1))])

    kept = (await client.get("/v1/status")).json()
    clock.advance(timedelta(seconds=KEEP_SECONDS))
    fresh = (await client.get("/v1/status")).json()

    assert kept == first
    assert fresh["ahead"]["minutes"][1]["due"] == 1


async def test_the_page_runs_only_its_own_files(client: httpx.AsyncClient) -> None:
    page = await client.get("/status")
    script = await client.get("/status/status.js")
    style = await client.get("/status/status.css")
    missing = await client.get("/status/other.js")

    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy
    assert "unsafe-inline" not in policy
    assert '<script src="/status/status.js"' in page.text
    assert "<script>" not in page.text
    assert script.headers["content-type"].startswith("text/javascript")
    assert "/v1/status" in script.text
    assert style.headers["content-type"].startswith("text/css")
    assert missing.status_code == 404
    assert missing.headers["content-type"] == PROBLEM


def test_the_endpoint_is_in_the_schema_and_the_page_is_not(app: FastAPI) -> None:
    paths = app.openapi()["paths"]

    operation = paths["/v1/status"]["get"]
    assert operation["security"] == [{"bearer": []}]
    assert set(operation["responses"]) == {"200", "401", "403", "429", "503"}
    assert not any(path.startswith("/status") for path in paths)
