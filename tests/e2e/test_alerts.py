"""Early alerts through the running service (`tocsin serve` on SQLite; `tocsin api` and a
`tocsin worker` on PostgreSQL).

Two one-offs are due 90 s after they are saved, each with an alert a minute before (the minute
between is the slack a loaded machine needs to cancel between the two rings). The
first rings twice: at its alert and at its time, each ring its own identity, the same text.
The second is cancelled once its alert has rung: its own time never rings. Every instant
compared is one the service recorded.
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


async def _firings(client: httpx.AsyncClient, made: dict[str, Any]) -> list[dict[str, Any]]:
    """The reminder's firings, oldest first."""
    return (await afirings(client, made))[::-1]


@pytest.mark.timeout(480)
async def test_an_alert_rings_before_its_occurrence_and_a_cancel_after_it_stops_the_rest(
    tmp_path: Path,
) -> None:
    """On SQLite (`tocsin serve`); test_alerts_postgres.py runs it on PostgreSQL."""
    await alert_then_cancel("sqlite", tmp_path, pg_url="")


async def alert_then_cancel(kind: str, tmp_path: Path, *, pg_url: str) -> None:
    with receiver() as sink, service(kind, tmp_path, pg_url, sink, SETTINGS) as base:
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            due = (datetime.now(UTC) + timedelta(seconds=90)).replace(microsecond=0)
            alert = due - timedelta(minutes=1)
            both = await acreate(client, text="dentist", at=iso(due), alerts=["1m"])
            cut = await acreate(client, text="call back", at=iso(due), alerts=["1m"])
            assert (both["next"], both["next_occurrence"]) == (iso(alert), iso(due))

            async def alerted() -> bool:
                rung = [await _firings(client, made) for made in (both, cut)]
                return all(f and f[0]["state"] == "sent" for f in rung)

            await eventually(alerted, within=80, every=0.5)
            shown = (await client.get(f"/v1/reminders/{both['id']}")).json()
            assert (shown["status"], shown["next"]) == ("pending", iso(due))
            cancelled = await client.delete(f"/v1/reminders/{cut['id']}")
            assert cancelled.status_code in (200, 204), cancelled.text

            async def rang_twice() -> bool:
                rung = await _firings(client, both)
                return len(rung) == 2 and rung[1]["state"] == "sent"

            await eventually(rang_twice, within=160, every=0.5)
            first, second = await _firings(client, both)
            assert first["id"] == f"{both['id']}.{int(alert.timestamp())}"
            assert second["id"] == f"{both['id']}.{int(due.timestamp())}"
            assert datetime.fromisoformat(first["sent_at"]) >= alert
            assert datetime.fromisoformat(second["sent_at"]) >= due
            done = (await client.get(f"/v1/reminders/{both['id']}")).json()
            assert done["status"] == "fired", done
            await eventually(  # the cancelled one's time passes without a ring
                lambda: _past(due + timedelta(seconds=5)), within=60, every=0.5
            )
            assert [f["id"] for f in await _firings(client, cut)] == [
                f"{cut['id']}.{int(alert.timestamp())}"
            ]
        stats = await sink.astats(ids=True)
    assert sorted(stats["arrivals"]) == sorted(
        [
            f"{both['id']}.{int(alert.timestamp())}",
            f"{both['id']}.{int(due.timestamp())}",
            f"{cut['id']}.{int(alert.timestamp())}",
        ]
    )


async def _past(instant: datetime) -> bool:
    return datetime.now(UTC) >= instant
