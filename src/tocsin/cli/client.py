"""The `tocsin` commands that are a client of a running server's HTTP API (add, list, show,
snooze, edit, cancel, next, firings, contacts, places, quiet-hours, lists, import, export),
beside the commands that run the server. docs/cli.md documents them.

Layout: `client_http` (requests, errors, exit statuses), `client_format` (what people and
scripts read), `client_time` (the zone times are said in), `client_command` (the options
every command shares and the one place errors become exit statuses), then one module per
group of commands."""

from __future__ import annotations

from typing import Any

from tocsin.cli import (
    client_contacts,
    client_import,
    client_lists,
    client_places,
    client_quiet,
    client_reminders,
    client_schedules,
)


def register(subparsers: Any) -> None:
    client_reminders.register(subparsers)
    client_schedules.register(subparsers)
    client_contacts.register(subparsers)
    client_places.register(subparsers)
    client_quiet.register(subparsers)
    client_lists.register(subparsers)
    client_import.register(subparsers)
