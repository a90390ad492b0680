"""`tocsin serve`, `tocsin api` and `tocsin keys` as real processes on a free port."""

from __future__ import annotations

import signal
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import httpx
import pytest

from tests.support.processes import clean_env, running, tocsin

pytestmark = pytest.mark.slow

README_CALL = (
    b'{"owner":"ana","text":"Water the plants","repeat":"every Monday 09:00",'
    b'"zone":"America/New_York","channel":"log"}'
)


def _next_monday_nine_new_york(now: datetime) -> str:
    local = now.astimezone(ZoneInfo("America/New_York"))
    for days in range(8):
        day = (local + timedelta(days=days)).date()
        candidate = datetime(day.year, day.month, day.day, 9, tzinfo=local.tzinfo)
        if day.weekday() == 0 and candidate >= local:
            return candidate.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    raise AssertionError("no Monday in a week")


def test_serve_answers_the_readme_call(tmp_path: Path) -> None:
    with running("serve", "--db", str(tmp_path / "tocsin.db")) as (base, process):
        before = datetime.now(UTC)
        # What `curl -X POST localhost:8000/v1/reminders -d '{…}'` sends.
        response = httpx.post(
            f"{base}/v1/reminders",
            content=README_CALL,
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        assert response.status_code == 201, response.text
        assert response.json()["next"] == _next_monday_nine_new_york(before)
        assert httpx.get(f"{base}/readyz").status_code == 200
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
        log = process.stdout.read() if process.stdout else ""
    assert "accepting requests without a key" in log
    assert "status=201" in log


def test_serve_rings_what_its_api_saved(tmp_path: Path) -> None:
    """API and scheduler share one process: a reminder due in two seconds is sent, and its
    `/metrics` count the ring with the API's requests."""
    with running("serve", "--db", str(tmp_path / "tocsin.db")) as (base, _):
        due = (datetime.now(UTC) + timedelta(seconds=2)).replace(microsecond=0)
        body = {
            "owner": "ana",
            "text": "Tea is ready",
            "at": due.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "zone": "Europe/London",
            "channel": "log",
        }
        made = httpx.post(f"{base}/v1/reminders", json=body).json()
        deadline = time.monotonic() + 15
        firings: list[dict[str, object]] = []
        while time.monotonic() < deadline and not firings:
            found = httpx.get(f"{base}/v1/reminders/{made['id']}/firings").json()
            firings = [f for f in found["firings"] if f["state"] == "sent"]
            time.sleep(0.2)
        metrics = httpx.get(f"{base}/metrics").text

    assert firings, "the reminder was not sent"
    assert 'tocsin_rings_total{channel="log",outcome="sent"} 1.0' in metrics
    assert "tocsin_ring_lateness_seconds_count 1.0" in metrics
    assert 'tocsin_http_requests_total{method="POST",route="/v1/reminders",status="201"} 1.0' in (
        metrics
    )
    assert firings[0]["due"] == body["at"]
    # Its first try, kept on the firing row, reads as any attempt does.
    assert firings[0]["history"] == [
        {
            "number": 1,
            "at": firings[0]["sent_at"],
            "channel": "log",
            "outcome": "sent",
            "error": None,
            "provider_id": None,
            "destination": "log",
        }
    ]


def test_serve_refuses_to_listen_beyond_loopback_without_keys(tmp_path: Path) -> None:
    # A documentation address (TEST-NET-1): refused before anything is bound.
    done = tocsin("serve", "--host", "192.0.2.10", "--db", str(tmp_path / "t.db"))

    assert done.returncode == 1
    assert "refusing to listen on 192.0.2.10 without API keys" in done.stderr
    assert "tocsin keys create" in done.stderr


def test_keys_then_a_server_that_needs_them(tmp_path: Path) -> None:
    db = str(tmp_path / "tocsin.db")
    created = tocsin("keys", "create", "--app", "phone", "--webhook-url", "http://x/h", "--db", db)
    assert created.returncode == 0, created.stderr
    key = next(line for line in created.stdout.splitlines() if line.startswith("tk_"))
    assert any(line.startswith("whsec_") for line in created.stdout.splitlines())
    again = tocsin("keys", "create", "--app", "phone", "--db", db)
    assert again.returncode == 1
    token = tocsin("keys", "owner-token", "ana", "--ttl", "1h", "--db", db).stdout.strip()
    assert token.startswith("to_")
    assert tocsin("keys", "create", "--app", "calendar", "--db", db).returncode == 0
    listed = tocsin("keys", "list", "--db", db)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].split()[:3] == ["APP", "KEY", "CREATED"]
    calendar, phone = lines[1].split(), lines[2].split()
    assert [calendar[0], *calendar[-2:]] == ["calendar", "-", "-"]
    assert [*phone[:2], *phone[-2:]] == ["phone", key[:11] + "…", "on", "http://x/h"]

    with running("api", "--db", db) as (base, _):
        refused = httpx.post(f"{base}/v1/reminders", content=README_CALL)
        accepted = httpx.post(
            f"{base}/v1/reminders", content=README_CALL, headers={"Authorization": f"Bearer {key}"}
        )
        mine = httpx.get(f"{base}/v1/reminders", headers={"Authorization": f"Bearer {token}"})

    assert refused.status_code == 401
    assert accepted.status_code == 201
    assert accepted.json()["source"] == "phone"
    assert [r["id"] for r in mine.json()["reminders"]] == [accepted.json()["id"]]


@pytest.mark.postgres
def test_api_refuses_an_old_postgres_schema(pg_url: str) -> None:
    done = tocsin("api", "--db", pg_url)

    assert done.returncode == 1
    assert "tocsin migrate" in done.stderr


def _children(pid: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.add(int(entry.name))
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_api_with_workers_shares_one_port(tmp_path: Path) -> None:
    db = str(tmp_path / "tocsin.db")
    with running("api", "--workers", "2", "--db", db) as (base, process):
        children = _children(process.pid)
        with httpx.Client(base_url=base) as client:
            answers = [client.post("/v1/reminders", content=README_CALL) for _ in range(20)]
        listed = httpx.get(f"{base}/v1/reminders", params={"owner": "ana", "limit": 50})
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0

    assert len(children) == 2
    assert all(answer.status_code == 201 for answer in answers)
    assert len(listed.json()["reminders"]) == 20
    time.sleep(0.2)
    assert not any(Path(f"/proc/{pid}").exists() for pid in children)


def test_api_workers_must_be_positive() -> None:
    done = tocsin("api", "--workers", "0")

    assert done.returncode == 2
    assert "--workers" in done.stderr


def test_dev_mode_serves_loopback_names_only_and_refuses_cross_site_writes(
    tmp_path: Path,
) -> None:
    """Without keys, `tocsin serve` is open to this machine's programs, not to web pages the
    developer visits: DNS rebinding (a foreign Host) and cross-site writes are refused."""
    with (
        running("serve", "--db", str(tmp_path / "tocsin.db")) as (base, _),
        httpx.Client(base_url=base) as client,
    ):
        port = base.rpartition(":")[2]
        rebound = client.post(
            "/v1/reminders", content=README_CALL, headers={"Host": f"evil.example:{port}"}
        )
        read_rebound = client.get("/v1/reminders?owner=ana", headers={"Host": "evil.example"})
        forged = client.post(
            "/v1/reminders",
            content=README_CALL,
            headers={"Origin": "http://evil.example", "Content-Type": "text/plain"},
        )
        form = client.post(
            "/v1/reminders",
            content=b"owner=ana",
            headers={
                "Sec-Fetch-Site": "cross-site",
                "Content-Type": "application/x-www-form-urlencoded",
            },
        )
        nothing = client.get("/v1/reminders?owner=ana").json()
        same_origin = client.post("/v1/reminders", content=README_CALL, headers={"Origin": base})
        by_name = client.get("/v1/reminders?owner=ana", headers={"Host": f"localhost:{port}"})

    assert rebound.status_code == 403
    assert rebound.headers["content-type"] == "application/problem+json"
    assert rebound.json()["type"].endswith("host-not-allowed")
    assert read_rebound.status_code == 403
    assert forged.status_code == 403
    assert forged.json()["type"].endswith("cross-origin-write")
    assert form.status_code == 403
    assert nothing["reminders"] == []
    assert same_origin.status_code == 201
    assert by_name.status_code == 200
    assert len(by_name.json()["reminders"]) == 1


def _key(db: str, *args: str) -> str:
    created = tocsin("keys", "create", *args, "--db", db)
    assert created.returncode == 0, created.stderr
    return next(line for line in created.stdout.splitlines() if line.startswith("tk_"))


def test_apps_are_tenants_owner_tokens_see_every_app_admins_all(tmp_path: Path) -> None:
    """Through `tocsin api`: an app key reads, lists, edits and cancels only its own app's
    reminders (404 across the line, so ids leak nothing), and cannot make another app's
    reminder ring at its own webhook; an owner token sees the owner's reminders from every
    app; an admin key sees them all."""
    db = str(tmp_path / "tocsin.db")
    phone, calendar = _key(db, "--app", "phone"), _key(db, "--app", "calendar")
    admin = _key(db, "--app", "ops", "--admin")
    token = tocsin("keys", "owner-token", "ana", "--db", db).stdout.strip()

    def auth(credential: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {credential}"}

    with running("api", "--db", db) as (base, _), httpx.Client(base_url=base) as client:
        mine = client.post("/v1/reminders", content=README_CALL, headers=auth(phone)).json()
        theirs = client.post("/v1/reminders", content=README_CALL, headers=auth(calendar)).json()
        path = f"/v1/reminders/{theirs['id']}"
        etag = client.get(path, headers=auth(calendar)).headers["ETag"]
        across = {
            "read": client.get(path, headers=auth(phone)),
            "edit": client.patch(
                path, json={"channel": "webhook"}, headers={**auth(phone), "If-Match": etag}
            ),
            "snooze": client.patch(path, json={"snooze": "10m"}, headers=auth(phone)),
            "cancel": client.delete(path, headers=auth(phone)),
            "firings": client.get(f"{path}/firings", headers=auth(phone)),
        }
        listed = {
            name: [
                r["id"]
                for r in client.get("/v1/reminders?owner=ana", headers=auth(credential)).json()[
                    "reminders"
                ]
            ]
            for name, credential in (("phone", phone), ("admin", admin), ("owner", token))
        }
        still = client.get(path, headers=auth(calendar)).json()
        by_owner = client.get(path, headers=auth(token))
        by_admin = client.get(path, headers=auth(admin))

    assert {name: answer.status_code for name, answer in across.items()} == dict.fromkeys(
        across, 404
    )
    # The same answer as for an id that does not exist: nothing of the reminder shows.
    assert all(answer.json()["type"].endswith("not-found") for answer in across.values())
    assert all("Water the plants" not in answer.text for answer in across.values())
    assert still["channel"] == "log"  # untouched
    assert still["status"] == "pending"
    assert listed["phone"] == [mine["id"]]
    assert sorted(listed["admin"]) == sorted(listed["owner"]) == sorted([mine["id"], theirs["id"]])
    assert by_owner.status_code == by_admin.status_code == 200


def test_rate_limits_per_key_and_per_address_for_bad_keys(tmp_path: Path) -> None:
    db = str(tmp_path / "tocsin.db")
    key = _key(db, "--app", "phone")
    env = clean_env(
        TOCSIN_RATE_LIMIT_KEY_PER_SECOND="5", TOCSIN_RATE_LIMIT_AUTH_FAILURES_PER_MINUTE="10"
    )
    with running("api", "--db", db, env=env) as (base, _), httpx.Client(base_url=base) as client:
        mine = {"Authorization": f"Bearer {key}"}
        answers = [client.get("/v1/reminders?owner=ana", headers=mine) for _ in range(30)]
        bad = {"Authorization": "Bearer tk_" + "x" * 43}
        guesses = [client.get("/v1/reminders?owner=ana", headers=bad) for _ in range(20)]
        health = client.get("/healthz")

    codes = [answer.status_code for answer in answers]
    assert codes[:10] == [200] * 10  # a burst of twice the rate
    assert 429 in codes
    limited = answers[codes.index(429)]
    assert limited.headers["content-type"] == "application/problem+json"
    assert int(limited.headers["retry-after"]) >= 1
    guessed = [answer.status_code for answer in guesses]
    assert guessed[:5] == [401] * 5  # half a minute's worth at once
    assert guessed[-1] == 429  # then refused before the key is looked up
    assert health.status_code == 200  # what needs no credentials is not limited
