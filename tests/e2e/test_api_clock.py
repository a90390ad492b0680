"""`tocsin api` on a host whose clock is 5 minutes behind the database's decides by the
database's clock, as the workers do: a reminder due a minute ago by that clock is refused
as in the past (it would otherwise be saved pending and never rung in time), and one due
soon is saved for the instant it was given."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from tests.e2e.service import iso
from tests.e2e.workers import wrong_clock
from tests.support.processes import clean_env, running

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


@pytest.mark.timeout(120)
def test_an_api_host_behind_the_database_refuses_what_is_already_past(
    pg_migrated_url: str, tmp_path: Path
) -> None:
    env = clean_env() | wrong_clock("-300s")
    with (
        running("api", "--db", pg_migrated_url, env=env, log=tmp_path / "api.log") as (base, _),
        httpx.Client(base_url=base, timeout=10) as client,
    ):
        now = datetime.now(UTC).replace(microsecond=0)  # the database's clock, on this host
        body = {"owner": "ana", "zone": "Europe/Paris", "channel": "log", "text": "Call mom"}
        past = client.post("/v1/reminders", json=body | {"at": iso(now - timedelta(seconds=60))})
        soon = client.post("/v1/reminders", json=body | {"at": iso(now + timedelta(seconds=60))})
    log = (tmp_path / "api.log").read_text()
    assert past.status_code == 422, past.text
    assert "past" in past.text
    assert soon.status_code == 201, soon.text
    assert soon.json()["next"] == iso(now + timedelta(seconds=60))
    assert "behind the database's" in log, log
