"""Ringing until done through the running service (`tocsin serve` on SQLite; `tocsin api`
and a `tocsin worker` on PostgreSQL), and the race between a done and the next nag.

Five one-offs ring 15 s after they are saved and nag every minute. Once their first ring is
sent, one is marked done at once: it never rings again. The others are marked done around
their first nag's instant (a second before it, at it, just after it): a done races the claim
of that nag. Whatever wins, nothing due after a done answered ever rings: every firing of a
reminder is due before its done's answer. Every instant compared is one the service gave.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.service import acreate, afirings, iso, service
from tests.integration.engine.support import eventually, receiver

pytestmark = [pytest.mark.slow, pytest.mark.long]

SETTINGS = {"TOCSIN_ALLOW_PRIVATE_URLS": "true"}
OFFSETS = (-1.0, -0.3, 0.0, 0.3)  # seconds from the first nag's instant to the done


async def _done_at(client: httpx.AsyncClient, firing_id: str, instant: datetime) -> datetime:
    """Mark the ring done at `instant`; when its answer came."""
    await asyncio.sleep(max(0.0, (instant - datetime.now(UTC)).total_seconds()))
    answer = await client.post(f"/v1/firings/{firing_id}/done")
    assert answer.status_code == 200, answer.text
    return datetime.now(UTC)


@pytest.mark.timeout(420)
async def test_a_done_that_answered_stops_every_nag_after_it(tmp_path: Path) -> None:
    """On SQLite (`tocsin serve`); test_until_done_postgres.py runs it on PostgreSQL."""
    await dones_racing_nags("sqlite", tmp_path, pg_url="")


async def dones_racing_nags(kind: str, tmp_path: Path, *, pg_url: str) -> None:
    with receiver() as sink, service(kind, tmp_path, pg_url, sink, SETTINGS) as base:
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            due = (datetime.now(UTC) + timedelta(seconds=15)).replace(microsecond=0)
            nag = due + timedelta(minutes=1)
            made: list[dict[str, Any]] = []
            for number in range(1 + len(OFFSETS)):
                made.append(
                    await acreate(client, text=f"pills {number}", at=iso(due), until_done="1m")
                )
            assert made[0]["until_done"] == "1m"

            async def rang_once() -> bool:
                rung = [await afirings(client, one) for one in made]
                return all(f and f[-1]["state"] == "sent" for f in rung)

            await eventually(rang_once, within=50, every=0.25)
            first = [(await afirings(client, one))[-1]["id"] for one in made]
            early = await _done_at(client, first[0], datetime.now(UTC))
            racing = (
                _done_at(client, ring, nag + timedelta(seconds=offset))
                for ring, offset in zip(first[1:], OFFSETS, strict=True)
            )
            answered = [early, *await asyncio.gather(*racing)]
            # Past the second nag's instant: any nag the dones did not stop has rung by then.
            await asyncio.sleep(
                max(0.0, (nag + timedelta(seconds=75) - datetime.now(UTC)).total_seconds())
            )
            seen = [await afirings(client, one) for one in made]
        stats = await sink.astats(ids=True)
    for rings, done in zip(seen, answered, strict=True):
        assert rings, "every reminder rang"
        for ring in rings:
            assert datetime.fromisoformat(ring["due"]) < done, (ring, done)
        assert len(rings) <= 2  # its time, and at most the first nag (claimed first)
    assert len(seen[0]) == 1  # done before any nag: rang once
    delivered = {firing_id.rpartition(".")[0] for firing_id in stats["arrivals"]}
    assert delivered == {one["id"] for one in made}
