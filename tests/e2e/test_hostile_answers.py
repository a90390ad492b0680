"""Receivers that answer with what no store or log should take as it is — a 500 whose body
holds a NUL, a 410 with a NUL, a 410 whose body forges a log line — beside a healthy one,
through `tocsin api` + `tocsin worker` on PostgreSQL: every healthy ring is recorded `sent` on
time and sent once, the hostile ones end with a readable error, and the log keeps one record
a line."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.workers import ENV, holders, workers
from tests.integration.engine.support import Receiver, eventually, receiver
from tests.support.processes import clean_env, running

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

FOREVER = str(time.time() + 7 * 86400)  # the hostile receivers fail every answer
FORGED = "2026-12-04T00:00:00.000Z ERROR tocsin.fake FORGED LINE"
HEALTHY = 12  # owners whose rings go to the healthy receiver, in each of two waves


def _failing(status: int, body: str) -> tuple[str, ...]:
    return ("--fail-until", FOREVER, "--status", str(status), "--body", body)


def _at(seconds: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


async def _contact(client: httpx.AsyncClient, owner: str, sink: Receiver) -> dict[str, Any]:
    made = await client.post(
        f"/v1/owners/{owner}/contacts", json={"kind": "webhook", "url": sink.url}
    )
    assert made.status_code == 201, made.text
    contact: dict[str, Any] = made.json()
    return contact


async def _remind(
    client: httpx.AsyncClient, owner: str, at: str, freshness: str = "10m"
) -> dict[str, Any]:
    body = {"owner": owner, "text": "Tea", "zone": "UTC", "channel": "webhook"}
    made = await client.post("/v1/reminders", json={**body, "at": at, "freshness": freshness})
    assert made.status_code == 201, made.text
    reminder: dict[str, Any] = made.json()
    return reminder


async def _final(client: httpx.AsyncClient, made: dict[str, Any], within: float) -> dict[str, Any]:
    found: list[dict[str, Any]] = []

    async def done() -> bool:
        found[:] = (await client.get(f"/v1/reminders/{made['id']}/firings")).json()["firings"]
        return bool(found) and found[0]["state"] in ("sent", "failed", "expired")

    await eventually(done, within=within, every=0.3)
    return found[0]


def _late(firing: dict[str, Any]) -> float:
    sent = datetime.fromisoformat(firing["sent_at"])
    return (sent - datetime.fromisoformat(firing["due"])).total_seconds()


@pytest.mark.timeout(240)
async def test_hostile_answers_beside_a_healthy_receiver(
    pg_migrated_url: str, tmp_path: Path
) -> None:
    url = pg_migrated_url
    settings = dict(ENV)
    with (
        receiver() as healthy,
        receiver(*_failing(500, r"bad\x00body")) as poisoned,
        receiver(*_failing(410, r"gone\x00")) as gone,
        receiver(*_failing(410, r"x\n" + FORGED)) as forger,
        workers(tmp_path) as started,
        running("api", "--db", url, env=clean_env(**settings), log=tmp_path / "api.log") as (
            base,
            _,
        ),
    ):
        worker = started.start(url, "w1", env=settings)

        async def holding() -> bool:
            return await holders(url) == {"w1": 4}

        await eventually(holding, within=60, every=0.2)  # start-up, on a loaded machine
        async with httpx.AsyncClient(base_url=base, timeout=10) as client:
            for n in range(HEALTHY * 2):
                await _contact(client, f"h{n}", healthy)
            await _contact(client, "poisoned", poisoned)
            gone_contact = await _contact(client, "gone", gone)
            await _contact(client, "forger", forger)

            # Due in the same seconds as healthy rings, so their results share batches.
            at = _at(4)
            first = [await _remind(client, f"h{n}", at) for n in range(HEALTHY)]
            hostile = [
                await _remind(client, "poisoned", at, freshness="30s"),
                await _remind(client, "gone", at),
                await _remind(client, "forger", at),
            ]
            # Saved after the hostile answers came back: the bug left them never recorded.
            await asyncio.sleep(8)
            later = [await _remind(client, f"h{n}", _at(3)) for n in range(HEALTHY, HEALTHY * 2)]

            healthy_rings = [await _final(client, m, within=60) for m in first + later]
            poisoned_ring, gone_ring, forged_ring = [
                await _final(client, m, within=90) for m in hostile
            ]
            contact = (await client.get(f"/v1/owners/gone/contacts/{gone_contact['id']}")).json()
            await asyncio.sleep(3)  # time for anything to be sent twice, if it were
        stats = await healthy.astats()
        log = worker.log.read_bytes()

    assert [f["state"] for f in healthy_rings] == ["sent"] * (HEALTHY * 2)
    lateness = [_late(f) for f in healthy_rings]
    assert max(lateness) < 10, f"healthy rings late: {sorted(lateness)}"
    assert stats["unique"] == stats["accepted"] == stats["total"] == HEALTHY * 2, stats

    assert poisoned_ring["state"] == "expired"
    assert "HTTP 500: bad\ufffdbody" in poisoned_ring["last_error"]
    assert len(poisoned_ring["history"]) > 1  # retried, each try recorded
    assert gone_ring["state"] == "failed"
    assert gone_ring["last_error"] == "HTTP 410: gone\ufffd (endpoint disabled)"
    assert contact["disabled_reason"] == "HTTP 410: gone\ufffd (endpoint disabled)"
    assert contact["disabled_at"] is not None
    assert forged_ring["state"] == "failed"
    assert forged_ring["last_error"] == f"HTTP 410: x {FORGED} (endpoint disabled)"

    assert b"\x00" not in log
    text = log.decode()
    assert not [line for line in text.splitlines() if line.startswith(FORGED[:24])], text
    assert "could not disable destination" not in text
    assert "attempts failed" not in text
