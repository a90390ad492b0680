"""Edits that land after the scheduler read the minute ahead, through the running service.

The scheduler holds the next minute in memory ~10 s before it starts. An edit made a few
seconds before the ring (after that read) must win: the ring follows the new rule, text,
channel and zone, and still rings on time — on `tocsin serve` (SQLite, one process) and on
`tocsin api` + `tocsin worker` (PostgreSQL, the edit crossing processes by NOTIFY). The sweep
is set to 30 s, so only the edit's own wake-up can bring the new version in on time.
"""

from __future__ import annotations

import sqlite3
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import httpx
import pytest

from tests.e2e.service import create, edit, firings, iso, late, logs, service, sleep_until
from tests.integration.engine.support import receiver
from tests.support.processes import clean_env, running

pytestmark = [pytest.mark.slow, pytest.mark.long]

QUIET_SWEEP = {"TOCSIN_SWEEP_SECONDS": "30", "TOCSIN_ALLOW_PRIVATE_URLS": "true"}
LEAD = 14  # seconds from creation to the ring: the minute is read ~10 s ahead
EDIT_AT = 5  # seconds before the ring the edits land: after the read
ON_TIME = 1.5  # seconds


@pytest.mark.postgres
@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_edits_after_the_read_ahead_win_and_ring_on_time(
    kind: str, tmp_path: Path, pg_migrated_url: str
) -> None:
    with (
        receiver() as sink,
        service(kind, tmp_path, pg_migrated_url, sink, QUIET_SWEEP) as base,
        httpx.Client(base_url=base, timeout=10) as client,
    ):
        due = (datetime.now(UTC) + timedelta(seconds=LEAD)).replace(microsecond=0)
        at = iso(due)
        series_to_once = create(client, at=at, repeat="RRULE:FREQ=DAILY", text="Daily")
        once_to_series = create(client, at=at, text="Once")
        new_text = create(client, at=at, text="Call mom")
        new_channel = create(client, at=at, text="Webhook me")
        paris = due.astimezone(ZoneInfo("Europe/Paris"))
        new_zone = create(client, at=paris.strftime("%Y-%m-%dT%H:%M:%S"), text="Zoned")
        untouched = create(client, at=at, text="Left alone")

        sleep_until(due - timedelta(seconds=EDIT_AT))
        edit(client, series_to_once, repeat=None)
        edit(client, once_to_series, repeat="RRULE:FREQ=DAILY")
        edit(client, new_text, text="Call dad")
        edit(client, new_channel, channel="webhook")
        moved = edit(client, new_zone, zone="America/New_York")  # the same wall time

        sleep_until(due + timedelta(seconds=4))
        made_now = {
            "series_to_once": series_to_once,
            "once_to_series": once_to_series,
            "new_text": new_text,
            "new_channel": new_channel,
            "new_zone": new_zone,
            "untouched": untouched,
        }
        # A ring's record is written once its first try is recorded, which a loaded machine
        # may take seconds more for: read until each ring expected is there (how late each
        # was sent is its own `sent_at`, checked below).
        give_up = due + timedelta(seconds=60)
        rung = {name: firings(client, made) for name, made in made_now.items()}
        while datetime.now(UTC) < give_up and not all(
            rung[name] for name in made_now if name != "new_zone"
        ):
            time.sleep(0.2)
            rung = {name: firings(client, made) for name, made in made_now.items()}
        states = {
            name: client.get(f"/v1/reminders/{made['id']}").json()
            for name, made in {
                "series_to_once": series_to_once,
                "once_to_series": once_to_series,
            }.items()
        }
        received = sink.stats(ids=True)

    # Each edited reminder rang once, at its second, by its new version.
    for name in ("series_to_once", "once_to_series", "new_text", "new_channel", "untouched"):
        assert [f["due"] for f in rung[name]] == [at], name
        assert rung[name][0]["state"] == "sent", (name, rung[name])
        assert late(rung[name][0]) < ON_TIME, (name, rung[name])
    assert states["series_to_once"]["status"] == "fired"
    assert states["series_to_once"]["next"] is None
    assert states["once_to_series"]["status"] == "pending"
    assert states["once_to_series"]["next"] == iso(due + timedelta(days=1))
    assert rung["new_channel"][0]["channel"] == "webhook"
    assert list(received["arrivals"]) == [rung["new_channel"][0]["id"]]
    assert rung["new_zone"] == []  # moved away from the loaded second: nothing rang there
    assert moved["next"] == iso(due + (paris.utcoffset() or timedelta(0)) + timedelta(hours=5))
    text = logs(tmp_path)
    assert "ring: Call dad" in text
    assert "ring: Call mom" not in text


@pytest.mark.timeout(90)
def test_a_row_that_cannot_be_planned_fails_alone_and_says_why(tmp_path: Path) -> None:
    """A series whose stored zone the time zone database no longer knows (as after a tzdata
    upgrade that dropped it) is due in the same second as two others: it is recorded failed
    with the reason, and the others ring."""
    db = tmp_path / "tocsin.db"
    with (
        running("serve", "--db", str(db), env=clean_env(), log=tmp_path / "serve.log") as (base, _),
        httpx.Client(base_url=base, timeout=10) as client,
    ):
        due = (datetime.now(UTC) + timedelta(seconds=LEAD)).replace(microsecond=0)
        broken = create(client, at=iso(due), repeat="RRULE:FREQ=DAILY", text="Broken")
        others = [create(client, at=iso(due), text=f"Fine {n}") for n in range(2)]
        with sqlite3.connect(db) as connection:
            # A new version, its occurrence waiting at the same instant: the scheduler loads
            # it as it would an edit's.
            connection.execute(
                "UPDATE reminders SET zone = 'Mars/Olympus_Mons', version = version + 1"
                " WHERE id = ?",
                (broken["id"],),
            )
            connection.execute(
                "UPDATE due SET version = version + 1 WHERE reminder_id = ?", (broken["id"],)
            )
        sleep_until(due + timedelta(seconds=4))  # the sweep (2 s) reads the new version
        failed = firings(client, broken)
        rung = [firings(client, made) for made in others]
        after = client.get(f"/v1/reminders/{broken['id']}").json()

    assert [f["state"] for f in failed] == ["failed"]
    assert "cannot be worked out" in failed[0]["last_error"]
    assert "Mars/Olympus_Mons" in failed[0]["last_error"]
    assert after["status"] == "ended"
    assert [[f["state"] for f in one] for one in rung] == [["sent"], ["sent"]]


@pytest.mark.postgres
@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_cancelling_a_series_while_it_rings_says_the_ring_is_on_its_way(
    kind: str, tmp_path: Path, pg_migrated_url: str
) -> None:
    """The webhook peer takes 1.5 s to answer: a daily series is cancelled while its ring is
    out. The answer is not a bare 204 (nothing will ring) but 200 with the cancelled
    reminder, whose `last_firing` is the ring on its way; that ring arrives, and nothing
    after it."""
    with (
        receiver("--delay", "1.5") as sink,
        service(kind, tmp_path, pg_migrated_url, sink, QUIET_SWEEP) as base,
        httpx.Client(base_url=base, timeout=10) as client,
    ):
        due = (datetime.now(UTC) + timedelta(seconds=LEAD)).replace(microsecond=0)
        series = create(
            client, at=iso(due), repeat="RRULE:FREQ=DAILY", channel="webhook", text="Pills"
        )
        while sink.stats()["total"] == 0:  # the ring is out, its answer 1.5 s away
            assert datetime.now(UTC) < due + timedelta(seconds=10), "it never rang"
            time.sleep(0.05)
        cancelled = client.delete(f"/v1/reminders/{series['id']}")
        sleep_until(due + timedelta(seconds=8))
        rung = firings(client, series)
        after = client.get(f"/v1/reminders/{series['id']}").json()
        received = sink.stats()
    assert cancelled.status_code == 200, cancelled.text
    body = cancelled.json()
    assert body["status"] == "cancelled"
    assert body["last_firing"]["due"] == iso(due)
    assert body["last_firing"]["state"] in ("queued", "sending")
    assert [(f["due"], f["state"]) for f in rung] == [(iso(due), "sent")], str(rung)
    assert after["status"] == "cancelled"
    assert after["next"] is None
    assert received["unique"] == 1


@pytest.mark.timeout(60)
def test_cancelling_a_series_between_rings_answers_204(tmp_path: Path) -> None:
    db = tmp_path / "tocsin.db"
    with (
        running("serve", "--db", str(db), env=clean_env(), log=tmp_path / "serve.log") as (base, _),
        httpx.Client(base_url=base, timeout=10) as client,
    ):
        due = (datetime.now(UTC) + timedelta(hours=1)).replace(microsecond=0)
        series = create(client, at=iso(due), repeat="RRULE:FREQ=DAILY", text="Later")
        cancelled = client.delete(f"/v1/reminders/{series['id']}")
    assert cancelled.status_code == 204
    assert cancelled.content == b""


@pytest.mark.postgres
@pytest.mark.timeout(120)
def test_snoozes_across_a_rings_first_write_say_ringing_then_snooze_it_once(
    tmp_path: Path, pg_migrated_url: str
) -> None:
    """`tocsin api` + `tocsin worker`, the webhook peer taking 1 s to answer: a one-off's
    ring is out, and snoozes follow each other until one lands after its firing is written
    (its first try recorded). Each answer is what the snooze's own mark found: `ringing`
    while the firing is not written, one 201, then `already-snoozed` by that 201's reminder;
    never a ring snoozed by nobody."""
    with (
        receiver("--delay", "1") as sink,
        service("postgres", tmp_path, pg_migrated_url, sink, QUIET_SWEEP) as base,
        httpx.Client(base_url=base, timeout=10) as client,
    ):
        due = (datetime.now(UTC) + timedelta(seconds=LEAD)).replace(microsecond=0)
        one_off = create(client, at=iso(due), channel="webhook", text="Stretch")
        while sink.stats()["total"] == 0:
            assert datetime.now(UTC) < due + timedelta(seconds=10), "it never rang"
            time.sleep(0.01)
        path = f"/v1/reminders/{one_off['id']}/snooze"
        answers: list[httpx.Response] = []
        while not any(a.status_code == 201 for a in answers):
            assert len(answers) < 2000, "no snooze landed after the first try was recorded"
            answers.append(client.post(path, json={"snooze": "1h"}))
        answers.append(client.post(path, json={"snooze": "1h"}))

    kinds = [
        a.json()["type"].rsplit(":", 1)[-1] if a.status_code == 409 else "201" for a in answers
    ]
    assert len(kinds) > 2, kinds  # at least one while the ring was out
    assert kinds == ["ringing"] * (len(kinds) - 2) + ["201", "already-snoozed"], kinds
    assert answers[-1].json()["snoozed_by"] == answers[-2].json()["id"]
