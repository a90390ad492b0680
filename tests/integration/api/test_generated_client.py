"""A client generated from `/openapi.json` by openapi-python-client drives a real `tocsin
serve`: what many users will call Tocsin with works as the schema promises.

The client is generated at test time from the running server's schema (generation is offline:
it reads the file) and imported by name; its code is untyped to mypy, so it is reached only
through `Any` (`generated`). It expresses every header Tocsin reads: `If-Match` and
`Idempotency-Key` are keyword arguments of the operations that take them. What it cannot
send, a body that is not JSON (400) or not sent as JSON (415), goes through the httpx
client it wraps, and the answer is still parsed into its problem model. The 503 of a
database that is away is tested in process (test_errors.py): the server here has its own.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest

from tests.support.processes import clean_env, running, tocsin

pytestmark = pytest.mark.slow

PACKAGE = "tocsin_client"  # openapi-python-client's name for a schema titled "Tocsin"


def generated(module: str) -> Any:
    """A module of the generated client (`api.reminders.create_reminder`, `models`…)."""
    return importlib.import_module(f"{PACKAGE}.{module}")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    """A server with an API key; owner tokens are limited to 1 request a second (burst 2),
    so a 429 is three requests away."""
    db = str(tmp_path_factory.mktemp("client") / "tocsin.db")
    created = tocsin("keys", "create", "--app", "phone", "--db", db)
    credentials = {
        "key": next(line for line in created.stdout.splitlines() if line.startswith("tk_")),
        "bob": tocsin("keys", "owner-token", "bob", "--db", db).stdout.strip(),
        "carol": tocsin("keys", "owner-token", "carol", "--db", db).stdout.strip(),
    }
    env = clean_env(TOCSIN_RATE_LIMIT_OWNER_PER_SECOND="1")
    with running("serve", "--db", db, env=env, log=Path(db).with_suffix(".log")) as (base, _):
        yield base, credentials


@pytest.fixture(scope="module")
def client_package(
    server: tuple[str, dict[str, str]], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """Generate the client from the server's schema and make it importable."""
    folder = tmp_path_factory.mktemp("generated")
    schema = folder / "schema.json"
    schema.write_bytes(httpx.get(f"{server[0]}/openapi.json").content)
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        [
            str(bin_dir / "openapi-python-client"),
            "generate",
            "--path",
            str(schema),
            "--output-path",
            str(folder / "out"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,  # its post-generation hook formats the code with ruff, from this venv
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Warning" not in done.stdout, done.stdout  # nothing of the schema was skipped
    sys.path.insert(0, str(folder / "out"))
    try:
        yield
    finally:
        sys.path.remove(str(folder / "out"))
        for name in [n for n in sys.modules if n.split(".")[0] == PACKAGE]:
            del sys.modules[name]


class Reminders:
    """The generated modules of the reminder operations, by name (`.create_reminder`)."""

    def __getattr__(self, operation: str) -> Any:
        return generated(f"api.reminders.{operation}")


@pytest.fixture
def clients(client_package: None) -> Iterator[ExitStack]:
    """Where the test's generated clients are closed (each holds an httpx connection pool)."""
    with ExitStack() as stack:
        yield stack


def authenticated(clients: ExitStack, base: str, token: str) -> Any:
    client = generated("client").AuthenticatedClient(base_url=base, token=token)
    return clients.enter_context(client)


def tomorrow_in_lisbon() -> str:
    local = datetime.now(ZoneInfo("Europe/Lisbon")) + timedelta(days=1)
    return local.strftime("%Y-%m-%dT%H:%M")


def a_reminder(**fields: Any) -> Any:
    body = {
        "owner": "ana",
        "text": "Call mom",
        "channel": "log",
        "zone": "Europe/Lisbon",
        "at": tomorrow_in_lisbon(),
    }
    return generated("models").ReminderIn.from_dict(body | fields)


def problem(answer: Any, status: int) -> Any:
    """The answer's parsed problem, checked to be `status` and of the generated model."""
    assert answer.status_code == status, answer.content
    assert isinstance(answer.parsed, generated("models").ProblemOut), answer.content
    assert answer.parsed.status == status
    assert answer.parsed.type_.startswith("urn:tocsin:problem:")  # `type` is a builtin
    return answer.parsed


def test_create_read_edit_snooze_and_cancel(
    server: tuple[str, dict[str, str]], clients: ExitStack
) -> None:
    base, credentials = server
    client = authenticated(clients, base, credentials["key"])
    reminders, models = Reminders(), generated("models")

    created = reminders.create_reminder.sync_detailed(
        client=client, body=a_reminder(), idempotency_key="import-1"
    )
    assert created.status_code == 201, created.content
    reminder = created.parsed
    assert isinstance(reminder, models.ReminderOut)
    assert created.headers["ETag"] == '"1"'
    assert reminder.status == models.ReminderStatus.PENDING
    # Timestamps are declared `date-time`: the client hands out datetimes, not strings.
    assert isinstance(reminder.next_, datetime)
    assert isinstance(reminder.created_at, datetime)

    read = reminders.get_reminder.sync_detailed(reminder.id, client=client)
    assert read.parsed.text == "Call mom"

    edit = models.ReminderPatch(text="Call mom and dad")
    edited = reminders.edit_reminder.sync_detailed(
        reminder.id, client=client, body=edit, if_match=read.headers["ETag"]
    )
    assert edited.status_code == 200, edited.content
    assert (edited.parsed.text, edited.headers["ETag"]) == ("Call mom and dad", '"2"')

    snoozed = reminders.snooze_reminder.sync_detailed(
        reminder.id, client=client, body=models.SnoozeIn(snooze="10m")
    )
    assert snoozed.status_code == 200, snoozed.content  # a pending one-off moves
    assert snoozed.parsed.next_ > reminder.next_
    older = reminders.edit_reminder.sync_detailed(  # the older form of a snooze
        reminder.id, client=client, body=models.ReminderPatch(snooze="10m")
    )
    assert older.status_code == 200, older.content
    assert older.parsed.next_ > snoozed.parsed.next_

    cancelled = reminders.cancel_reminder.sync_detailed(reminder.id, client=client)
    assert cancelled.status_code == 204
    read = reminders.get_reminder.sync_detailed(reminder.id, client=client)
    assert read.parsed.status == models.ReminderStatus.CANCELLED


def test_each_error_is_parsed_into_the_problem_model(
    server: tuple[str, dict[str, str]], clients: ExitStack
) -> None:
    base, credentials = server
    client = authenticated(clients, base, credentials["key"])
    reminders, models = Reminders(), generated("models")
    create, change = reminders.create_reminder, reminders.edit_reminder
    saved = create.sync_detailed(client=client, body=a_reminder()).parsed
    http = client.get_httpx_client()

    malformed = http.post(
        "/v1/reminders", content=b"{", headers={"Content-Type": "application/json"}
    )
    problem(create._build_response(client=client, response=malformed), 400)
    stranger = authenticated(clients, base, "tk_" + "x" * 43)
    problem(reminders.get_reminder.sync_detailed(saved.id, client=stranger), 401)
    bob = authenticated(clients, base, credentials["bob"])
    problem(create.sync_detailed(client=bob, body=a_reminder(owner="ana")), 403)
    problem(reminders.get_reminder.sync_detailed("06h2t78nsp7knvtqapke", client=client), 404)
    edit = models.ReminderPatch(text="Call dad")
    problem(change.sync_detailed(saved.id, client=client, body=edit, if_match='"7"'), 412)
    big = a_reminder(metadata={"notes": "x" * 70_000})
    problem(create.sync_detailed(client=client, body=big), 413)
    text = http.post("/v1/reminders", content=b"hi", headers={"Content-Type": "text/plain"})
    problem(create._build_response(client=client, response=text), 415)
    unowned = a_reminder()
    unowned.owner = generated("types").UNSET
    fault = problem(create.sync_detailed(client=client, body=unowned), 422)
    assert [error.field for error in fault.errors] == ["owner"]
    problem(change.sync_detailed(saved.id, client=client, body=edit), 428)
    snooze, soon = reminders.snooze_reminder, models.SnoozeIn(snooze="soon")
    fault = problem(snooze.sync_detailed(saved.id, client=client, body=soon), 422)
    assert [error.field for error in fault.errors] == ["snooze"]
    assert reminders.cancel_reminder.sync_detailed(saved.id, client=client).status_code == 204
    again = problem(reminders.cancel_reminder.sync_detailed(saved.id, client=client), 409)
    assert again.reminder_status == models.ReminderStatus.CANCELLED
    later = models.SnoozeIn(snooze="10m")
    cancelled = problem(snooze.sync_detailed(saved.id, client=client, body=later), 409)
    assert cancelled.type_ == "urn:tocsin:problem:cancelled"
    carol = authenticated(clients, base, credentials["carol"])
    answers = [reminders.list_reminders.sync_detailed(client=carol).status_code for _ in range(4)]
    assert answers[:2] == [200, 200]
    problem(reminders.list_reminders.sync_detailed(client=carol), 429)
