"""The CLI client end to end: `tocsin add | list | … | import | export` run as real processes
against a running `tocsin serve`, their `--json` parsed, their errors and exit statuses
checked as a script would see them."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest

from tests.support.processes import clean_env, free_port, running, tocsin
from tocsin.cli.client_http import OK, PARTIAL, REFUSED, UNAVAILABLE, USAGE

pytestmark = [pytest.mark.slow, pytest.mark.long]

IMPORT_LINES = 10_000
# Lines of the big import that are wrong, and the field the report must name for each.
BAD_LINES = {17: "line", 2500: "zone", 7001: "text", 9999: "repeat"}


@dataclass(frozen=True, kw_only=True, slots=True)
class Run:
    status: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)

    def problem(self) -> dict[str, Any]:
        found: dict[str, Any] = json.loads(self.err)
        return found


@dataclass(frozen=True, kw_only=True, slots=True)
class Server:
    base: str
    db: Path

    def env(self, **settings: str) -> dict[str, str]:
        return clean_env(TOCSIN_URL=self.base, TOCSIN_ZONE="Europe/Paris", **settings)

    def cli(self, *args: str, **settings: str) -> Run:
        done = tocsin(*args, env=self.env(**settings))
        return Run(status=done.returncode, out=done.stdout, err=done.stderr)

    def ok(self, *args: str, **settings: str) -> Any:
        """The parsed `--json` answer of a command that must succeed."""
        run = self.cli(*args, "--json", **settings)
        assert run.status == OK, run
        return run.json()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("cli")
    db = folder / "tocsin.db"
    with running("serve", "--db", str(db), log=folder / "serve.log") as (base, _):
        yield Server(base=base, db=db)


def test_a_reminder_is_added_listed_shown_edited_snoozed_and_cancelled(server: Server) -> None:
    made = server.ok("add", "call mom", "--at", "18:00", "--zone", "Europe/Paris", "--owner", "ana")
    assert made["text"] == "call mom"
    assert made["zone"] == "Europe/Paris"
    assert made["next_local"][11:16] == "18:00"  # the next 18:00 on Paris's clock
    series = server.ok("add", "water the plants", "--repeat", "every Monday 9:00", "--owner", "ana")
    assert series["rule"] == "FREQ=WEEKLY;BYDAY=MO;BYHOUR=9;BYMINUTE=0"
    assert series["zone"] == "Europe/Paris"  # TOCSIN_ZONE

    listed = server.ok("list", "--owner", "ana", "--status", "pending")
    assert [r["id"] for r in listed["reminders"]] == [made["id"], series["id"]]
    table = server.cli("list", "--owner", "ana")
    assert table.status == OK
    assert "call mom" in table.out
    assert "in " in table.out
    assert server.ok("show", made["id"])["id"] == made["id"]

    # Hours ahead of Paris's clock, so that the edited reminder cannot ring during the test.
    later = datetime.now(ZoneInfo("Europe/Paris")).replace(second=0) + timedelta(hours=3)
    edited = server.ok("edit", made["id"], "--text", "call mom and dad", "--at", f"{later:%H:%M}")
    assert edited["text"] == "call mom and dad"
    assert edited["next_local"][11:16] == f"{later:%H:%M}"
    moved = server.ok("snooze", made["id"], "10m")
    snoozed = later + timedelta(minutes=10)  # a one-off moves, counted from its due time
    assert moved["next_local"][11:16] == f"{snoozed:%H:%M}"

    cancelled = server.cli("cancel", made["id"])
    assert cancelled.status == OK
    assert f"cancelled {made['id']}" in cancelled.out
    again = server.cli("cancel", made["id"], "--json")
    assert again.status == REFUSED
    assert again.problem()["type"] == "urn:tocsin:problem:already-cancelled"


def test_channels_are_a_comma_list_or_a_fallback_chain(server: Server) -> None:
    both = server.ok("add", "tea", "--at", "+1h", "--owner", "ana", "--channel", "log,webhook")
    chain = server.ok("add", "tea", "--at", "+1h", "--owner", "ana", "--fallback", "webhook,log")
    assert both["channel"] == ["log", "webhook"]
    assert (chain["channel"], chain["fallback"]) == (None, ["webhook", "log"])
    listed = server.cli("list", "--owner", "ana").out
    assert "log,webhook" in listed
    assert "webhook>log" in listed
    assert server.ok("edit", chain["id"], "--channel", "log")["channel"] == "log"

    both_ways = server.cli(
        "add", "x", "--at", "+1h", "--channel", "log", "--fallback", "log,webhook"
    )
    assert both_ways.status == USAGE  # argparse: one or the other
    twice = server.cli("add", "x", "--at", "+1h", "--owner", "ana", "--fallback", "log,log")
    assert twice.status == REFUSED
    assert "fallback[1]" in twice.err


def test_a_phrase_previews_and_a_bad_one_names_its_field(server: Server) -> None:
    preview = server.ok(
        "next", "monthly on the last Friday at 17:00", "--zone", "Europe/Lisbon", "--count", "3"
    )
    assert len(preview["occurrences"]) == 3
    assert all(o["local"][11:16] == "17:00" for o in preview["occurrences"])

    bad = server.cli("add", "x", "--repeat", "every blursday", "--owner", "ana")
    assert bad.status == REFUSED
    assert bad.out == ""
    assert "(422)" in bad.err
    assert "  repeat: " in bad.err
    assert "blursday" in bad.err
    as_json = server.cli("next", "every blursday", "--json")  # the phrase is sent as `when`
    assert as_json.status == REFUSED
    assert [e["field"] for e in as_json.problem()["errors"]] == ["when"]

    [one_off] = server.ok("next", "tomorrow 9am", "--zone", "Europe/Lisbon")["occurrences"]
    assert one_off["local"][11:16] == "09:00"
    words = server.ok("add", "call mom", "--at", "tomorrow 6pm", "--owner", "ana")
    assert words["at"][11:] == "18:00:00"  # kept as the wall time it was resolved to


def test_errors_have_exit_statuses_scripts_can_trust(server: Server) -> None:
    missing = server.cli("show", "0000000000000000", "--json")
    assert missing.status == REFUSED
    assert missing.problem()["status"] == 404

    nobody = server.cli("list", "--owner", "ana", "--url", f"http://127.0.0.1:{free_port()}")
    assert nobody.status == UNAVAILABLE
    assert "cannot reach" in nobody.err

    assert server.cli("add", "x", "--owner", "ana").status == USAGE  # neither --at nor --repeat
    assert server.cli("snooze", "0000000000000000").status == USAGE
    assert server.cli("add", "x", "--channel", "pigeon").status == USAGE  # argparse's own
    assert server.cli("import", "/nonexistent.jsonl").status == USAGE


def sent_firings(server: Server, reminder_id: str) -> list[dict[str, Any]]:
    """The reminder's firings once the newest is sent (within a minute)."""
    give_up = time.monotonic() + 60
    while time.monotonic() < give_up:
        firings: list[dict[str, Any]] = server.ok("firings", reminder_id)["firings"]
        if firings and firings[0]["state"] == "sent":
            return firings
        time.sleep(0.3)
    raise AssertionError(f"no sent firing: {firings}")


def test_a_ring_shows_in_its_firings(server: Server) -> None:
    made = server.ok("add", "tea", "--at", "+1s", "--owner", "bo")
    firings = sent_firings(server, made["id"])
    assert firings[0]["channel"] == "log"
    table = server.cli("firings", made["id"])
    assert table.status == OK
    assert "sent" in table.out


def test_a_reminder_rung_until_done_is_marked_done(server: Server) -> None:
    made = server.ok(
        "add",
        "pills",
        "--at",
        "+1s",
        "--owner",
        "bo",
        "--until-done",
        "5m",
        "--until-done-max",
        "3",
    )
    assert (made["until_done"], made["until_done_max"]) == ("5m", 3)
    firings = sent_firings(server, made["id"])
    assert server.ok("show", made["id"])["next"] is not None  # its first nag waits
    marked = server.ok("done", firings[0]["id"])
    assert marked["done_at"] is not None
    said = server.cli("done", firings[0]["id"])
    assert said.status == OK
    assert said.out.startswith(f"done {firings[0]['id']} at ")
    assert server.ok("show", made["id"])["status"] == "fired"  # no nag left
    assert server.cli("done", f"{made['id']}.1").status != OK


def test_contacts_are_added_listed_and_removed(server: Server) -> None:
    email = server.ok("contacts", "add", "--owner", "cy", "email", "cy@example.org")
    sms = server.ok("contacts", "add", "--owner", "cy", "sms", "+33612345678", "--label", "mobile")
    assert email["address"] == {"address": "cy@example.org"}
    assert sms["label"] == "mobile"
    private = server.cli("contacts", "add", "--owner", "cy", "webhook", "http://127.0.0.1/x")
    assert private.status == REFUSED
    assert "  url: " in private.err

    listed = server.ok("contacts", "list", "--owner", "cy")["contacts"]
    assert {c["id"] for c in listed} == {email["id"], sms["id"]}
    assert server.ok("contacts", "remove", "--owner", "cy", email["id"])["removed"] is True
    assert [c["id"] for c in server.ok("contacts", "list", "--owner", "cy")["contacts"]] == [
        sms["id"]
    ]
    assert server.cli("contacts", "list").status == USAGE  # whose?


def test_places_are_added_listed_near_a_point_edited_and_removed(server: Server) -> None:
    home = server.ok("places", "add", "--owner", "di", "Home", "52.52,13.405")
    office = server.ok(
        "places", "add", "--owner", "di", "Office", "52.5163,13.3777", "--radius", "100"
    )
    assert (home["radius_m"], office["radius_m"]) == (150, 100)
    off_earth = server.cli("places", "add", "--owner", "di", "Moon", "95,0")
    assert off_earth.status == REFUSED
    assert "  latitude: " in off_earth.err
    assert server.cli("places", "add", "--owner", "di", "Moon", "north").status == USAGE

    near = server.ok("places", "list", "--owner", "di", "--near", "52.5163,13.3777")["places"]
    assert [p["name"] for p in near] == ["Office", "Home"]
    assert near[0]["distance_m"] == 0
    table = server.cli("places", "list", "--owner", "di", "--near", "52.5163,13.3777")
    assert table.status == OK, table.err
    assert "inside" in table.out
    assert "1.7 km" in table.out  # to home's edge

    moved = server.ok("places", "edit", "--owner", "di", home["id"], "--radius", "300")
    assert moved["radius_m"] == 300
    assert server.ok("places", "remove", "--owner", "di", office["id"])["removed"] is True
    listed = server.ok("places", "list", "--owner", "di")["places"]
    assert [(p["id"], p["radius_m"]) for p in listed] == [(home["id"], 300)]
    assert server.cli("places", "edit", "--owner", "di", home["id"]).status == USAGE


def test_a_reminder_at_a_place_is_added_shown_and_rung_by_a_reported_arrival(
    server: Server,
) -> None:
    home = server.ok("places", "add", "--owner", "ed", "Home", "52.52,13.405")["id"]
    made = server.ok(
        "add", "bins", "--owner", "ed", "--arrive", home, "--after", "00:00", "--once", "day"
    )
    assert made["on"] == {
        "place": home,
        "event": "arrive",
        "after": "00:00",
        "before": None,
        "once": "day",
    }
    shown = server.cli("show", made["id"])
    assert shown.status == OK, shown.err
    assert f"arrive at {home} from 00:00 to 24:00, once a day" in shown.out
    both = server.cli("add", "bins", "--owner", "ed", "--arrive", home, "--at", "18:00")
    assert both.status == USAGE
    assert server.cli("add", "bins", "--owner", "ed", "--once", "day").status == USAGE

    rang = server.cli("places", "arrive", "--owner", "ed", home)
    assert rang.status == OK, rang.err
    assert f"rang {made['id']}" in rang.out
    again = server.ok("places", "arrive", "--owner", "ed", home)
    assert again["rang"] == []
    assert "(once: day)" in again["passed"][0]["reason"]
    old = server.cli("places", "leave", "--owner", "ed", home, "--at", "2020-01-01T00:00Z")
    assert old.status == REFUSED
    assert "  at: " in old.err


def test_quiet_hours_are_set_shown_and_cleared(server: Server) -> None:
    saved = server.ok(
        "quiet-hours", "set", "--owner", "di", "22:00-07:00", "--zone", "Asia/Kolkata"
    )
    assert (saved["start"], saved["end"], saved["zone"]) == ("22:00", "07:00", "Asia/Kolkata")
    shown = server.ok("quiet-hours", "show", "--owner", "di")["quiet_hours"]
    assert [(q["start"], q["source"]) for q in shown] == [("22:00", None)]
    table = server.cli("quiet-hours", "show", "--owner", "di")
    assert table.status == OK, table.err
    assert "22:00-07:00" in table.out
    assert "Asia/Kolkata" in table.out
    bad = server.cli("quiet-hours", "set", "--owner", "di", "22:00-22:00", "--zone", "UTC")
    assert bad.status == REFUSED
    assert "  end: " in bad.err
    assert (
        server.cli("quiet-hours", "set", "--owner", "di", "22:00", "--zone", "UTC").status == USAGE
    )
    assert server.ok("quiet-hours", "clear", "--owner", "di")["cleared"] is True
    assert server.ok("quiet-hours", "show", "--owner", "di")["quiet_hours"] == []
    assert server.cli("quiet-hours", "clear", "--owner", "di").status != OK  # none left
    digest = server.ok(
        "add",
        "digest",
        "--at",
        "+1h",
        "--owner",
        "di",
        "--priority",
        "bulk",
        "--ignore-quiet-hours",
    )
    assert digest["ignore_quiet_hours"] is True
    shown_reminder = server.cli("show", digest["id"])
    assert "quiet hours:" in shown_reminder.out, shown_reminder.err
    waits = server.ok("edit", digest["id"], "--no-ignore-quiet-hours")
    assert waits["ignore_quiet_hours"] is False


def test_early_alerts_are_added_shown_and_removed(server: Server) -> None:
    made = server.ok(
        "add", "dentist", "--at", "+3h", "--owner", "ed", "--alert", "15m", "--alert", "1h"
    )
    assert made["alerts"] == ["1h", "15m"]
    assert made["next"] < made["next_occurrence"]
    shown = server.cli("show", made["id"])
    assert "1h, 15m before each ring" in shown.out, shown.err
    bad = server.cli("add", "x", "--at", "+3h", "--owner", "ed", "--alert", "soon")
    assert bad.status == REFUSED
    assert "alerts.0" in bad.err
    plain = server.ok("edit", made["id"], "--no-alerts")
    assert (plain["alerts"], plain["next"]) == ([], plain["next_occurrence"])


def test_a_list_is_made_shared_with_a_reminder_and_left(server: Server, tmp_path: Path) -> None:
    def token(owner: str) -> str:
        made = tocsin("keys", "owner-token", owner, "--db", str(server.db))
        assert made.returncode == 0, made.stderr
        return made.stdout.strip()

    ana, ben = token("li-ana"), token("li-ben")
    made = server.ok("lists", "create", "Household", TOCSIN_KEY=ana)
    invited = server.ok("lists", "invite", made["id"], "li-ben", "--role", "editor", TOCSIN_KEY=ana)
    assert [(m["member"], m["state"]) for m in invited["members"]] == [
        ("li-ana", "joined"),
        ("li-ben", "invited"),
    ]
    server.ok("lists", "accept", made["id"], "li-ben", TOCSIN_KEY=ben)
    table = server.cli("lists", "show", TOCSIN_KEY=ben)
    assert table.status == OK, table.err
    assert "Household" in table.out
    assert "li-ben (editor)" in table.out

    saved = server.ok(
        "add", "bins out", "--at", "+1h", "--channel", "log", "--list", made["id"],
        "--assignee", "li-ana", TOCSIN_KEY=ben,
    )  # fmt: skip
    assert (saved["list"], saved["assignee"], saved["owner"]) == (
        made["id"],
        "li-ana",
        made["owner"],
    )
    listed = server.ok("list", "--list", made["id"], TOCSIN_KEY=ana)["reminders"]
    assert [r["id"] for r in listed] == [saved["id"]]
    everyone = server.ok("edit", saved["id"], "--assignee", "everyone", TOCSIN_KEY=ben)
    assert everyone["assignee"] is None
    server.ok("edit", saved["id"], "--assignee", "li-ana", TOCSIN_KEY=ben)
    shown = server.cli("show", saved["id"], TOCSIN_KEY=ana)
    assert "li-ana" in shown.out.split("for:")[1], shown.out

    viewer = server.cli("lists", "invite", made["id"], "li-cy", "--role", "boss", TOCSIN_KEY=ana)
    assert viewer.status == USAGE  # not a role
    assert server.ok("lists", "remove", made["id"], "li-ben", TOCSIN_KEY=ben)["removed"] is True
    gone = server.cli("list", "--list", made["id"], TOCSIN_KEY=ben)
    assert gone.status == REFUSED  # no longer his list

    # An export of the list's reminders imports into a list: its owner name is left out.
    exported = server.cli("export", "--list", made["id"], TOCSIN_KEY=ana)
    assert exported.status == OK, exported.err
    chores = tmp_path / "chores.jsonl"
    chores.write_text(exported.out + '{"text": "sweep", "repeat": "every day at 9:00"}\n')
    report = server.ok("import", str(chores), "--list", made["id"], TOCSIN_KEY=ana)
    assert (report["saved"], report["refused"]) == (2, []), report
    listed = server.ok("list", "--list", made["id"], TOCSIN_KEY=ana)["reminders"]
    assert sorted(r["text"] for r in listed) == ["bins out", "bins out", "sweep"]
    assert [r["assignee"] for r in listed].count("li-ana") == 2

    assert server.ok("lists", "delete", made["id"], TOCSIN_KEY=ana)["deleted"] is True
    assert server.cli("lists", "show", made["id"], TOCSIN_KEY=ana).status == REFUSED
    cancelled = server.ok("show", saved["id"])
    assert cancelled["status"] == "cancelled"


def write_import(path: Path, owner: str) -> None:
    with path.open("w") as out:
        for number in range(1, IMPORT_LINES + 1):
            item = {"owner": owner, "text": f"item {number}", "repeat": "every day at 9:00"}
            if number == 17:
                out.write("{not json\n")
                continue
            if number == 2500:
                item["zone"] = "Mars/Olympus"
            if number == 7001:
                del item["text"]
            if number == 9999:
                item["repeat"] = "every blursday"
            out.write(json.dumps(item) + "\n")


def exported_texts(server: Server, owner: str) -> list[str]:
    run = server.cli("export", "--owner", owner)
    assert run.status == OK, run.err
    return [json.loads(line)["text"] for line in run.out.splitlines()]


def test_an_import_of_10000_lines_reports_the_bad_ones_and_saves_nothing_twice(
    server: Server, tmp_path: Path
) -> None:
    path = tmp_path / "big.jsonl"
    write_import(path, "imp")

    first = server.cli("import", str(path), "--json")
    assert first.status == PARTIAL, first.err
    report = first.json()
    assert report["lines"] == IMPORT_LINES
    assert report["saved"] == IMPORT_LINES - len(BAD_LINES)
    assert {r["line"]: r["field"] for r in report["refused"]} == BAD_LINES
    good = {f"item {n}" for n in range(1, IMPORT_LINES + 1) if n not in BAD_LINES}
    texts = exported_texts(server, "imp")
    assert len(texts) == len(good)
    assert set(texts) == good

    again = server.cli("import", str(path), "--json")
    assert again.status == PARTIAL
    assert (again.json()["saved"], again.json()["replayed"]) == (0, len(good))
    assert len(exported_texts(server, "imp")) == len(good)

    human = server.cli("import", str(path))
    assert "line 2500: zone: " in human.err
    assert "line 7001: text: " in human.err
    assert f"saved {len(good)} of {IMPORT_LINES} lines" in human.out


def test_an_import_killed_half_way_resumes_without_saving_twice(
    server: Server, tmp_path: Path
) -> None:
    path = tmp_path / "big.jsonl"
    write_import(path, "crash")
    importing = subprocess.Popen(
        [sys.executable, "-m", "tocsin", "import", str(path)],
        env=server.env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        give_up = time.monotonic() + 30
        while time.monotonic() < give_up and importing.poll() is None:
            page = httpx.get(f"{server.base}/v1/reminders", params={"owner": "crash", "limit": 1})
            if page.json()["reminders"]:
                importing.send_signal(signal.SIGKILL)  # a batch is in: crash now
                break
            time.sleep(0.02)
    finally:
        importing.wait(timeout=30)

    resumed = server.cli("import", str(path), "--json")
    assert resumed.status == PARTIAL, resumed.err
    report = resumed.json()
    good = IMPORT_LINES - len(BAD_LINES)
    assert report["saved"] + report["replayed"] == good
    texts = exported_texts(server, "crash")
    assert len(texts) == len(set(texts)) == good


def test_a_csv_import_names_the_line_of_each_bad_row(server: Server, tmp_path: Path) -> None:
    path = tmp_path / "few.csv"
    path.write_text(
        "text,repeat,metadata\n"
        'stretch,weekdays at 8:30,"{""room"": 1}"\n'
        "tea,every blursday,\n"
        "water,every day at 7:00,{oops\n"
        '"two\nlines",every day at 6:00,\n'
    )
    run = server.cli("import", str(path), "--owner", "csv", "--json")
    assert run.status == PARTIAL, run.err
    assert [(r["line"], r["field"]) for r in run.json()["refused"]] == [
        (3, "repeat"),
        (4, "metadata"),
    ]
    texts = sorted(exported_texts(server, "csv"))
    assert texts == ["stretch", "two\nlines"]


def test_an_export_imports_into_another_server_as_it_was(server: Server, tmp_path: Path) -> None:
    server.ok("add", "one", "--repeat", "weekdays at 8:30", "--owner", "dee", "--channel", "log")
    server.ok("add", "two", "--at", "2030-01-02T03:04", "--owner", "dee", "--metadata", '{"a": 1}')
    gone = server.ok("add", "three", "--at", "21:00", "--owner", "dee")
    server.ok("cancel", gone["id"])
    export = tmp_path / "dee.jsonl"
    export.write_text(server.cli("export", "--owner", "dee").out)

    kept = ("owner", "text", "channel", "zone", "at", "repeat", "rule", "next", "metadata")
    with running("serve", "--db", str(tmp_path / "other.db"), log=tmp_path / "other.log") as (
        base,
        _,
    ):
        other = Server(base=base, db=tmp_path / "other.db")
        run = other.cli("import", str(export), "--json")
        assert run.status == PARTIAL  # the cancelled one is refused: it would ring again
        assert [(r["line"], r["field"]) for r in run.json()["refused"]] == [(3, "status")]
        copied = other.ok("list", "--owner", "dee")["reminders"]
    original = server.ok("list", "--owner", "dee", "--status", "pending")["reminders"]

    # Sorted: the ids of one batch's items need not follow the items' order.
    def fields(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return sorted(({k: r[k] for k in kept} for r in found), key=lambda r: str(r["text"]))

    assert fields(copied) == fields(original)


def test_keys_and_owner_tokens(tmp_path: Path) -> None:
    db = tmp_path / "keys.db"
    with running("serve", "--db", str(db), log=tmp_path / "serve.log") as (base, _):
        server = Server(base=base, db=db)
        made = tocsin("keys", "create", "--app", "cli", "--db", str(db))
        key = made.stdout.splitlines()[1]
        token = tocsin("keys", "owner-token", "eve", "--db", str(db)).stdout.strip()

        keyless = server.cli("list", "--owner", "eve", "--json")
        assert keyless.status == REFUSED
        assert keyless.problem()["status"] == 401
        assert server.ok("add", "k", "--at", "+1h", "--owner", "eve", TOCSIN_KEY=key)["source"] == (
            "cli"
        )
        # With an owner token the owner is the token's: no --owner anywhere.
        mine = server.ok("add", "t", "--at", "+1h", TOCSIN_KEY=token)
        assert mine["owner"] == "eve"
        assert [r["text"] for r in server.ok("list", TOCSIN_KEY=token)["reminders"]] == ["k", "t"]
        assert server.ok("contacts", "list", TOCSIN_KEY=token) == {"contacts": []}
        other = server.cli("list", "--owner", "fay", "--key", token, "--json")
        assert other.status == REFUSED
        assert other.problem()["status"] == 403
