"""`tocsin rezone` across a real tzdata upgrade, on both backends.

A server running tzdata 2022a (the `tzdata==2022.1` wheel, installed by the test into the
pytest cache and put first on PYTHONPATH) saves reminders in America/Mexico_City, whose
daylight saving time Mexico abolished in October 2022 (tzdata 2022f): under 2022a a June
09:00 is 14:00Z (CDT), under the installed release 15:00Z (CST all year). Then, with the
installed release, the server warns at start and `tocsin rezone` moves those rings.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from tests.support.processes import clean_env, running, tocsin
from tocsin.cli.startup import open_ready_store
from tocsin.domain import Reminder
from tocsin.rezone import note_zone_data, rezone
from tocsin.settings import Settings
from tocsin.store import open_store
from tocsin.store.codec import bucket_of
from tocsin.time.zonedata import tzdata_version

pytestmark = pytest.mark.slow

OLD_TZDATA = "2022.1"  # IANA 2022a: Mexico City still had DST


@pytest.fixture(scope="session")
def old_tzdata(request: pytest.FixtureRequest) -> Path:
    """A folder holding the old tzdata package, installed once and kept in pytest's cache."""
    folder = Path(request.config.cache.mkdir(f"tzdata-{OLD_TZDATA}"))
    if not (folder / "tzdata" / "__init__.py").exists():
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target",
             str(folder), f"tzdata=={OLD_TZDATA}"],
            check=True,
            timeout=120,
        )  # fmt: skip
    return folder


def _june_and_january() -> tuple[str, str]:
    """Local 09:00 on the next 15 June and 15 January (`at` values)."""
    now = datetime.now(UTC)
    june = now.year if now < datetime(now.year, 6, 1, tzinfo=UTC) else now.year + 1
    january = now.year + 1
    return f"{june}-06-15T09:00", f"{january}-01-15T09:00"


def _save(base: str, **fields: str) -> dict[str, str]:
    body = {"owner": "ana", "text": "Call", "channel": "log", **fields}
    made = httpx.post(f"{base}/v1/reminders", json=body)
    assert made.status_code == 201, made.text
    answer: dict[str, str] = made.json()
    return answer


async def _read(url: str, *ids: str) -> list[Reminder]:
    store = await open_store(url)
    try:
        found = [await store.get_reminder(one) for one in ids]
    finally:
        await store.close()
    assert all(reminder is not None for reminder in found)
    return [reminder for reminder in found if reminder is not None]


async def test_rezone_moves_the_rings_a_tzdata_upgrade_changed(
    db_url: str, old_tzdata: Path, caplog: pytest.LogCaptureFixture
) -> None:
    june, january = _june_and_january()
    city = "America/Mexico_City"
    db = ["--db", db_url, "--migrate"]
    old = clean_env(PYTHONPATH=str(old_tzdata))
    with running("serve", *db, env=old) as (base, _):
        one_off = _save(base, zone=city, at=june)
        series = _save(base, zone=city, repeat="every year on Jun 15 at 9:00")
        winter = _save(base, zone=city, at=january)
        instant = _save(base, zone=city, at=f"{june[:10]}T14:00:00Z")
        elsewhere = _save(base, zone="America/New_York", at=june)
    assert one_off["next"] == series["next"] == f"{june[:10]}T14:00:00Z"  # CDT, under 2022a

    # Every command opens its store this way, and warns.
    with caplog.at_level(logging.WARNING, logger="tocsin.rezone"):
        opened = await open_ready_store(Settings(database_url=db_url), migrate=True)
        await opened.close()
    [warning] = [record.getMessage() for record in caplog.records]
    assert "pending reminders may have been scheduled with tzdata 2022a" in warning
    assert f"this process uses {tzdata_version()}" in warning

    dry = tocsin("rezone", "--dry-run", "--db", db_url)
    assert dry.returncode == 0, dry.stderr
    assert "pending reminders in them: " in dry.stdout
    assert "would move: 2 (2 by +1h)" in dry.stdout
    ids = [made["id"] for made in (one_off, series, winter, instant, elsewhere)]
    before = await _read(db_url, *ids)
    assert [r.version for r in before] == [1] * 5

    done = tocsin("rezone", "--db", db_url)
    assert done.returncode == 0, done.stderr
    assert "moved: 2 (2 by +1h)" in done.stdout
    assert f"every pending due time is worked out with {tzdata_version()}" in done.stdout

    after = await _read(db_url, *ids)
    cst = datetime.fromisoformat(f"{june}:00-06:00").astimezone(UTC)
    assert [r.due_at for r in after[:2]] == [cst, cst]  # 09:00 CST now
    assert [r.version for r in after] == [2, 2, 1, 1, 1]  # as an edit: one version up
    assert [r.due_at for r in after[2:]] == [r.due_at for r in before[2:]]
    store = await open_store(db_url)
    try:
        due = await store.load_due(
            shards=range(1024), first_bucket=bucket_of(cst), last_bucket=bucket_of(cst), limit=9
        )
        assert {ring.reminder_id for ring in due} == set(ids[:2])  # in the new bucket
        assert await note_zone_data(store) == []  # no warning at the next start
        again = await rezone(store, now=datetime.now(UTC))
    finally:
        await store.close()
    assert (again.zones, again.moved) == (0, 0)
