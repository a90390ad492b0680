"""The CLI client's parts that need no server: times on the command line, import files and
their batches, how answers become exit statuses (a fake transport), and every command's help."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from tocsin.auth import sign_owner_token
from tocsin.cli import CLIENT_COMMANDS, build_parser
from tocsin.cli.client_command import owner_of
from tocsin.cli.client_format import problem_lines, relative, reminder_details
from tocsin.cli.client_http import REFUSED, UNAVAILABLE, Api, ClientError, Target
from tocsin.cli.client_import import BATCH_ITEMS, Progress, batches
from tocsin.cli.client_records import Line, read_records
from tocsin.cli.client_reminders import add_reminder, edit_reminder
from tocsin.cli.client_schedules import next_rings

WITH_HELP = (
    ("add",),
    ("list",),
    ("show",),
    ("snooze",),
    ("edit",),
    ("cancel",),
    ("next",),
    ("firings",),
    ("contacts", "list"),
    ("contacts", "add"),
    ("contacts", "remove"),
    ("import",),
    ("export",),
)
NOON_UTC = datetime(2026, 10, 21, 12, 0, tzinfo=UTC)  # 14:00 in Paris (summer time)


@pytest.mark.parametrize(
    ("argv", "sent"),
    [
        (["add", "x", "--at", "18:00"], {"at": "18:00"}),
        (["add", "x", "--at", "+10m"], {"at": "+10m"}),
        (["add", "x", "--at", "tomorrow 9am", "--repeat", "daily"], {"at": "tomorrow 9am"}),
        (["add", "x", "--when", "in 5 seconds"], {"when": "in 5 seconds"}),
        (["next", "tomorrow 9am"], {"when": "tomorrow 9am"}),
        (["next", "every Monday 9am"], {"when": "every Monday 9am"}),
        (["next", "daily", "--at", "tomorrow 9am"], {"repeat": "daily", "at": "tomorrow 9am"}),
    ],
)
def test_times_go_to_the_server_as_typed(argv: list[str], sent: dict[str, str]) -> None:
    """The server reads them, with its clock, as it reads the page's and the API's: a CLI
    that resolved `18:00` itself would do so by another clock and another grammar."""
    bodies: list[dict[str, Any]] = []

    def server(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(201, json={"occurrences": [], "id": "r1"})

    args = build_parser().parse_args([*argv, "--zone", "Europe/Paris", "--json"])
    command = add_reminder if argv[0] == "add" else next_rings
    with fake(server) as api:
        command(api, args)
    schedule = {k: v for k, v in bodies[0].items() if k in ("at", "repeat", "when")}
    assert schedule == sent | ({"repeat": "daily"} if "--repeat" in argv else {})


def test_relative_times_read_as_people_say_them() -> None:
    assert relative(NOON_UTC + timedelta(hours=3, minutes=5), NOON_UTC) == "in 3 hours"
    assert relative(NOON_UTC - timedelta(days=2), NOON_UTC) == "2 days ago"
    assert relative(NOON_UTC + timedelta(seconds=20), NOON_UTC) == "in 20 seconds"
    assert relative(NOON_UTC - timedelta(seconds=59), NOON_UTC) == "59 seconds ago"
    assert relative(NOON_UTC + timedelta(milliseconds=400), NOON_UTC) == "now"
    assert relative(NOON_UTC + timedelta(minutes=1), NOON_UTC) == "in 1 minute"


def test_show_leaves_a_space_after_every_name_the_longest_too() -> None:
    shown = reminder_details(
        {
            "id": "06h2t78nsp7knvtqapke",
            "owner": "ana",
            "text": "Tea",
            "status": "pending",
            "next": None,
            "repeat": None,
            "channel": "log",
            "freshness": "10m",
            "snoozed_from": "06h2t78nsp7knvtqapkf",
        }
    )

    lines = dict(line.split(": ", 1) for line in shown.splitlines())
    assert lines["snoozed from"] == "06h2t78nsp7knvtqapkf"
    assert lines["id"].strip() == "06h2t78nsp7knvtqapke"


def test_json_lines_keep_their_numbers_and_drop_what_export_adds() -> None:
    content = b"\n".join(
        [
            json.dumps({"id": "x", "status": "pending", "text": "a", "next": "…"}).encode(),
            b"",
            b"[1, 2]",
            b"{oops",
            json.dumps({"text": "b", "zone": "Asia/Tokyo", "repat": "typo"}).encode(),
            json.dumps({"text": "c", "status": "fired"}).encode(),
        ]
    )
    lines, refused = read_records(content, "jsonl", {"zone": "UTC", "channel": "log"})
    assert [(line.number, line.item) for line in lines] == [
        (1, {"zone": "UTC", "channel": "log", "text": "a"}),
        # An unknown field goes on to the server, which names it: a typo is not dropped.
        (5, {"zone": "Asia/Tokyo", "channel": "log", "text": "b", "repat": "typo"}),
    ]
    assert [(r.line, r.field) for r in refused] == [(3, "line"), (4, "line"), (6, "status")]


def test_csv_rows_are_numbered_by_the_line_they_start_on() -> None:
    content = b'text,metadata\n"two\nlines",\nok,"{""a"": 1}"\nbad,{oops\nwide,,extra\n'
    lines, refused = read_records(content, "csv", {})
    assert [(line.number, line.item) for line in lines] == [
        (2, {"text": "two\nlines"}),
        (4, {"text": "ok", "metadata": {"a": 1}}),
    ]
    assert [(r.line, r.field) for r in refused] == [(5, "metadata"), (6, "line")]


def test_batches_are_cut_the_same_way_by_count_and_by_size() -> None:
    small = [Line(number=n, item={}, size=10) for n in range(2500)]
    assert [len(b.lines) for b in batches(small)] == [BATCH_ITEMS, BATCH_ITEMS, 500]
    assert [b.position for b in batches(small)] == [0, 1, 2]
    big = [Line(number=n, item={}, size=900_000) for n in range(5)]
    assert [len(b.lines) for b in batches(big)] == [2, 2, 1]


def test_an_owner_token_names_its_owner() -> None:
    token = sign_owner_token("ana", expires=NOON_UTC, secret="s" * 32)
    args = argparse.Namespace(owner=None)
    with Api(Target(url="http://t", key=token)) as api:
        assert owner_of(args, api) == "ana"
    with Api(Target(url="http://t", key="tk_app")) as api:
        assert owner_of(args, api) is None


def fake(handler: Any) -> Api:
    return Api(Target(url="http://tocsin.test", key=None), transport=httpx.MockTransport(handler))


def problem(status: int, **fields: Any) -> httpx.Response:
    body = {"title": "T", "status": status, **fields}
    return httpx.Response(status, json=body, headers={"Content-Type": "application/problem+json"})


def test_a_busy_server_is_asked_again_and_a_failing_one_is_unavailable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("tocsin.cli.client_http.time.sleep", lambda seconds: None)
    answers = iter([problem(503), problem(429), httpx.Response(200, json={"ok": 1})])
    with fake(lambda request: next(answers)) as api:
        assert api.get("/v1/x").body == {"ok": 1}
    with fake(lambda request: problem(500, detail="boom")) as api, pytest.raises(ClientError) as e:
        api.request("POST", "/v1/x", json={})
    assert e.value.exit_status == UNAVAILABLE
    assert e.value.problem["detail"] == "boom"
    html_page = httpx.Response(200, text="<html>")
    with fake(lambda request: html_page) as api, pytest.raises(ClientError) as html:
        api.get("/")
    assert html.value.exit_status == UNAVAILABLE
    assert "Tocsin server" in str(html.value)


def test_an_edit_from_a_stale_read_says_someone_changed_it() -> None:
    seen: list[tuple[str, str | None]] = []

    def server(request: httpx.Request) -> httpx.Response:
        seen.append((request.method, request.headers.get("If-Match")))
        if request.method == "GET":
            return httpx.Response(200, json={"zone": "UTC"}, headers={"ETag": '"3"'})
        return problem(412, type="urn:tocsin:problem:precondition-failed", detail="stale")

    editable = "at repeat when zone channel fallback freshness priority ignore_quiet_hours alerts"
    unset = dict.fromkeys([*editable.split(), "until_done", "until_done_max"])
    unset |= {"metadata": None, "assignee": None}
    args = argparse.Namespace(id="r1", text="new", json=False, **unset)
    with fake(server) as api, pytest.raises(ClientError) as stale:
        edit_reminder(api, args)
    assert seen == [("GET", None), ("PATCH", '"3"')]
    assert stale.value.exit_status == REFUSED
    assert "someone changed it" in stale.value.problem["detail"]


def test_problems_read_as_sentences_with_one_line_per_field() -> None:
    lines = problem_lines(
        "add",
        {
            "title": "Unprocessable Entity",
            "status": 422,
            "detail": "see zone",
            "errors": [{"field": "zone", "message": "unknown"}],
        },
    )
    assert lines == ["tocsin add: Unprocessable Entity (422): see zone", "  zone: unknown"]


@pytest.mark.parametrize("command", WITH_HELP, ids=" ".join)
def test_every_client_command_has_examples_and_exit_statuses_in_its_help(
    command: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as done:
        build_parser().parse_args([*command, "--help"])
    assert done.value.code == 0
    shown = capsys.readouterr().out
    assert "examples:\n  tocsin " in shown
    assert "exit status: 0 done; 1 " in shown


def test_the_client_commands_are_the_ones_main_loads_alone() -> None:
    everything = build_parser()
    client_only = build_parser(["tocsin.cli.client"])
    assert {*_commands(client_only)} == CLIENT_COMMANDS
    assert {*_commands(everything)} > CLIENT_COMMANDS


def _commands(parser: argparse.ArgumentParser) -> list[str]:
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return list(subparsers.choices)


def test_the_progress_bar_shows_only_on_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    shown = Progress(total=4000, shown=True)
    shown.advance(1000)
    shown.done()
    Progress(total=4000, shown=False).advance(1000)
    assert capsys.readouterr().err == f"\rimporting [{'#' * 7}{'.' * 23}] 1,000/4,000\n"
