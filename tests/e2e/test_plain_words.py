"""Reminders made in plain words, end to end: a real `tocsin serve` resolves `when` with its
own clock in the reminder's zone, and a reminder made with `in 3 seconds` (by the API and by
the CLI) rings."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest

from tests.support.processes import clean_env, running, tocsin

pytestmark = pytest.mark.slow

BODY = {"owner": "ana", "zone": "Europe/Paris", "channel": "log"}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("words")
    with running("serve", "--db", str(folder / "tocsin.db"), log=folder / "serve.log") as (url, _):
        yield url


def sent_firing(client: httpx.Client, reminder_id: str) -> dict[str, Any]:
    """The reminder's ring once delivered (a loaded machine may take a while to get there)."""
    give_up = time.monotonic() + 30
    while time.monotonic() < give_up:
        found = client.get(f"/v1/reminders/{reminder_id}/firings").json()["firings"]
        if found and found[0]["state"] == "sent":
            firing: dict[str, Any] = found[0]
            return firing
        time.sleep(0.3)
    raise AssertionError(f"no sent firing of {reminder_id}: {found}")


def test_a_reminder_made_with_in_3_seconds_rings(base: str) -> None:
    with httpx.Client(base_url=base, timeout=10) as client:
        before = datetime.now(UTC).replace(microsecond=0)
        made = client.post("/v1/reminders", json=BODY | {"text": "Tea", "when": "in 3 seconds"})
        after = datetime.now(UTC)
        assert made.status_code == 201, made.text
        due = datetime.fromisoformat(made.json()["next"])
        # Three whole seconds from the server's now, which lies between the two readings here.
        assert before + timedelta(seconds=3) <= due <= after + timedelta(seconds=3)
        assert made.json()["at"] == made.json()["next"]  # a delay is kept as its instant

        firing = sent_firing(client, made.json()["id"])

    assert firing["due"] == made.json()["next"]
    assert firing["channel"] == "log"


def test_the_cli_sends_words_that_ring(base: str) -> None:
    env = clean_env(TOCSIN_URL=base, TOCSIN_ZONE="Europe/Paris")
    done = tocsin("add", "stretch", "--when", "in 3 seconds", "--owner", "bo", "--json", env=env)
    assert done.returncode == 0, done.stderr
    made = json.loads(done.stdout)

    with httpx.Client(base_url=base, timeout=10) as client:
        firing = sent_firing(client, made["id"])

    assert firing["due"] == made["next"]


def test_the_preview_of_tomorrow_9am_says_tomorrow(base: str) -> None:
    paris = ZoneInfo("Europe/Paris")
    tomorrow = {(datetime.now(paris) + timedelta(days=1)).date()}
    with httpx.Client(base_url=base, timeout=10) as client:
        body = {"zone": "Europe/Paris", "when": "tomorrow 9am"}
        answer = client.post("/v1/occurrences", json=body)
        tomorrow.add((datetime.now(paris) + timedelta(days=1)).date())  # a test over midnight

    assert answer.status_code == 200, answer.text
    [ring] = answer.json()["occurrences"]
    local = datetime.fromisoformat(ring["local"])
    assert local.date() in tomorrow
    assert (local.hour, local.minute) == (9, 0)
