"""`tocsin next | firings`: when a schedule would ring, and how a reminder's rings went."""

from __future__ import annotations

import argparse
from typing import Any

from tocsin.cli import client_format as fmt
from tocsin.cli.client_command import add_command
from tocsin.cli.client_http import OK, Api, usage_error
from tocsin.cli.client_reminders import schedule_options
from tocsin.cli.client_time import default_zone


def register(subparsers: Any) -> None:
    preview = add_command(
        subparsers,
        "next",
        next_rings,
        summary="preview when a schedule rings, without saving anything",
        examples="""\
  tocsin next "every last Friday 17:00" --zone Europe/Lisbon
  tocsin next "weekdays at 8:30" --zone America/New_York --count 10 --json
  tocsin next "tomorrow 9am" --zone Asia/Tokyo
  tocsin next --at 18:00 --zone Asia/Tokyo""",
    )
    preview.add_argument(
        "phrase",
        nargs="?",
        help='a time ("tomorrow 9am"), a repeat ("every Monday 9:00") or an RRULE',
    )
    schedule_options(preview, defaults=True)
    preview.add_argument("--count", type=int, default=5, help="how many rings, 1-100 (default 5)")

    firings = add_command(
        subparsers,
        "firings",
        list_firings,
        summary="a reminder's rings, newest first, with their delivery state",
        examples="  tocsin firings 06gnwn92027gfgz1\n  tocsin firings 06gnwn92027gfgz1 --json",
    )
    firings.add_argument("id", help="the reminder's id")
    firings.add_argument("--limit", type=int, default=50, help="how many, 1-200 (default 50)")


def next_rings(api: Api, args: argparse.Namespace) -> int:
    if args.phrase is not None and args.when is not None:
        raise usage_error("give the phrase or --when, not both")
    when = args.phrase if args.phrase is not None else args.when
    if when is not None and args.at is not None and args.repeat is None:
        when, args.repeat = None, when  # a phrase with --at: the repeat that --at starts
    if when is None and args.repeat is None and args.at is None:
        raise usage_error('give a phrase ("every Monday 9:00", "tomorrow 9am"), --at, or both')
    zone = args.zone or default_zone()
    body: dict[str, Any] = {"zone": zone, "count": args.count}
    for name, value in (("when", when), ("repeat", args.repeat), ("at", args.at)):
        if value is not None:
            body[name] = value
    found = api.request("POST", "/v1/occurrences", json=body).body
    rows = found["occurrences"]
    fmt.print_found(
        found, rows, fmt.occurrences_table, empty="it never rings again", as_json=args.json
    )
    return OK


def list_firings(api: Api, args: argparse.Namespace) -> int:
    found = api.get(f"/v1/reminders/{args.id}/firings", limit=args.limit).body
    rows = found["firings"]
    fmt.print_found(found, rows, fmt.firings_table, empty="it has not rung yet", as_json=args.json)
    return OK
