"""Upgrading with the service running (PostgreSQL): migration 0034 applied before the upgrade
(`tocsin migrate --before-upgrade`, while the release before would still run), this release's
`tocsin api` and `tocsin worker` started on it, and migration 0036, which takes the firings'
key by id and their `id` column away, applied under them by `tocsin migrate` while their
reminders ring and their rings are read and marked done through the API: every ring arrives
once, every reminder shows its one ring, and no request fails."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.service import acreate, afirings, iso, logs, service
from tests.integration.engine.support import eventually, receiver
from tests.integration.store.test_online_migration import database_of_the_release_before
from tests.support.processes import clean_env
from tocsin.store.migrations import migrations_for

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.long]

SETTINGS = {"TOCSIN_ALLOW_PRIVATE_URLS": "true"}
COUNT = 60  # reminders, due 6 a second over 10 seconds


def _migrate(pg_url: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "tocsin", "migrate", "--db", pg_url, *args],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


async def _done(client: httpx.AsyncClient, made: dict[str, Any]) -> dict[str, Any]:
    """Its one ring, once sent, marked done."""
    [ring] = await afirings(client, made)
    answer = await client.post(f"/v1/firings/{ring['id']}/done")
    assert answer.status_code == 200, answer.text
    marked: dict[str, Any] = answer.json()
    return marked


@pytest.mark.timeout(300)
async def test_this_release_rings_through_the_migration_after_its_upgrade(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await database_of_the_release_before(pg_url, monkeypatch)
    before = await asyncio.to_thread(_migrate, pg_url, "--before-upgrade")
    assert "applied migrations: 0034_firings_in_due_order, 0035_occurrences_copied" in before
    assert "0036_firings_keyed_alone: applies after the upgrade" in before
    with receiver() as sink, service("postgres", tmp_path, pg_url, sink, SETTINGS) as base:
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            start = (datetime.now(UTC) + timedelta(seconds=8)).replace(microsecond=0)
            made = [
                await acreate(client, text=f"n{n}", at=iso(start + timedelta(seconds=n // 6)))
                for n in range(COUNT)
            ]

            async def rang(some: list[dict[str, Any]]) -> bool:
                return all(
                    [[r["state"] for r in await afirings(client, one)] == ["sent"] for one in some]
                )

            # The first second's rings sent, read and marked done: the API's statements
            # prepared on the schema before the migration.
            await eventually(lambda: rang(made[:6]), within=60, every=0.2)
            marked = [await _done(client, one) for one in made[:6]]
            after = await asyncio.to_thread(_migrate, pg_url)
            migrated_at = datetime.now(UTC)
            await eventually(lambda: rang(made), within=90, every=0.5)
            marked += [await _done(client, one) for one in made[6:]]
            seen = [await afirings(client, one) for one in made]
            status = await asyncio.to_thread(_migrate, pg_url, "--status")
        stats = await sink.astats(ids=True)

    assert after.startswith(
        "applied migrations: 0036_firings_keyed_alone, 0037_occurrences_kept_in_due"
    )
    assert migrated_at < start + timedelta(seconds=COUNT // 6), "migrated while rings were due"
    known = len(migrations_for("postgres"))
    assert status.startswith(f"{known} of {known} migrations applied")
    assert [len(rings) for rings in seen] == [1] * COUNT
    assert {ring["id"] for rings in seen for ring in rings} == set(stats["arrivals"])
    assert stats["unique"] == COUNT, "each ring arrived"
    assert stats["duplicates"] == 0
    assert all(ring["done_at"] for ring in marked)
    said = logs(tmp_path)
    assert "Traceback" not in said
    assert "cached statement" not in said
