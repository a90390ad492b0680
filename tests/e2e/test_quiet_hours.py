"""Quiet hours through the running service (`tocsin serve` on SQLite; `tocsin api` and a
`tocsin worker` on PostgreSQL).

The owner's quiet hours hold now and end at a minute boundary 40-100 s ahead. Four
reminders ring into them: an urgent one goes at once; a bulk one is held (`queued`, untried,
its last error saying until when) and goes once they end, never before; a bulk one whose
freshness ends before they do expires at its first turn, saying why; a bulk one that ignores
quiet hours goes at once. Another owner's bulk
ring, with no quiet hours, goes at once. The status board counts the ring held. Every
instant compared is one the service recorded.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.service import acreate, afirings, iso, service
from tests.integration.engine.support import eventually, receiver

pytestmark = [pytest.mark.slow, pytest.mark.long]

SETTINGS = {"TOCSIN_ALLOW_PRIVATE_URLS": "true"}


def _clock(instant: datetime) -> str:
    return instant.strftime("%H:%M")


async def _last(client: httpx.AsyncClient, made: dict[str, Any]) -> dict[str, Any]:
    """The reminder's newest firing; {} before it has one."""
    found = await afirings(client, made)
    return found[0] if found else {}


@pytest.mark.timeout(300)
async def test_quiet_hours_hold_bulk_rings_until_they_end_and_let_urgent_ones_through(
    tmp_path: Path,
) -> None:
    """On SQLite (`tocsin serve`); test_quiet_hours_postgres.py runs it on PostgreSQL."""
    await quiet_hours_hold_bulk_rings("sqlite", tmp_path, pg_url="")


async def quiet_hours_hold_bulk_rings(kind: str, tmp_path: Path, *, pg_url: str) -> None:
    with receiver() as sink, service(kind, tmp_path, pg_url, sink, SETTINGS) as base:
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            now = datetime.now(UTC)
            end = (now + timedelta(seconds=100)).replace(second=0, microsecond=0)
            quiet = {"start": _clock(now - timedelta(hours=1)), "end": _clock(end), "zone": "UTC"}
            saved = await client.put("/v1/owners/ana/quiet-hours", json=quiet)
            assert saved.status_code == 200, saved.text
            assert saved.json()["quiet_until"] == iso(end)

            at = iso(datetime.now(UTC) + timedelta(seconds=3))
            urgent = await acreate(client, text="urgent", at=at)
            bulk = await acreate(client, text="bulk", at=at, priority="bulk", freshness="1h")
            stale = await acreate(client, text="stale", at=at, priority="bulk", freshness="30s")
            elsewhere = await acreate(client, owner="bob", text="bob's", at=at, priority="bulk")
            through = await acreate(
                client, text="through", at=at, priority="bulk", ignore_quiet_hours=True
            )
            assert through["ignore_quiet_hours"] is True
            made = (urgent, bulk, stale, elsewhere, through)

            async def decided() -> bool:
                shown = [await _last(client, one) for one in made]
                return all(f.get("state") not in (None, "sending") for f in shown)

            await eventually(decided, within=60, every=0.5)
            first, held, expired, other, ignoring = [await _last(client, one) for one in made]
            assert first["state"] == "sent", first
            assert datetime.fromisoformat(first["sent_at"]) < end
            assert ignoring["state"] == "sent", ignoring
            assert datetime.fromisoformat(ignoring["sent_at"]) < end
            assert other["state"] == "sent", other
            assert held["state"] == "queued", held
            assert held["last_error"] == f"held by quiet hours until {iso(end)}", held
            assert held["attempts"] == 0, held  # untried: nothing went out
            assert expired["state"] == "expired", expired
            assert expired["last_error"].startswith("expired: quiet hours held it until"), expired

            async def counted() -> bool:  # the status board counts the ring held
                board = (await client.get("/v1/status")).json()
                return bool(board["queue"]["quiet"] == 1)

            await eventually(counted, within=30, every=0.5)

            async def held_sent() -> bool:
                return (await _last(client, bulk)).get("state") == "sent"

            left = (end - datetime.now(UTC)).total_seconds()
            await eventually(held_sent, within=max(left, 0) + 60, every=0.5)
            rang = await _last(client, bulk)
            assert datetime.fromisoformat(rang["sent_at"]) >= end, rang
        stats = await sink.astats(ids=True)
    delivered = {firing_id.rpartition(".")[0] for firing_id in stats["arrivals"]}
    assert delivered == {urgent["id"], bulk["id"], elsewhere["id"], through["id"]}  # not stale
