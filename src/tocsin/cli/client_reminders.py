"""`tocsin add | list | show | snooze | edit | cancel`: one owner's reminders over the API."""

from __future__ import annotations

import argparse
import json
import os
import sys
import uuid
from typing import Any

from tocsin.cli import client_format as fmt
from tocsin.cli.client_command import add_command, owner_of, owner_option
from tocsin.cli.client_http import OK, Api, ClientError, usage_error
from tocsin.cli.client_time import default_zone
from tocsin.domain import Channel, ReminderStatus

DEFAULT_CHANNEL = "log"  # the one channel every server has: it writes the ring to its log
CHANNELS = [c.value for c in Channel]


PRIORITIES = ("urgent", "bulk")
PRIORITY_HELP = (
    "urgent (the default, unless the app key says bulk) rings go before bulk ones (digests, "
    "newsletters) when not all can go at once"
)


def channel_list(text: str) -> list[str]:
    """`--channel` and `--fallback`: channel names, comma-separated (`apns,email`)."""
    names = [name.strip() for name in text.split(",")]
    unknown = [name for name in names if name not in CHANNELS]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"not a channel: {', '.join(unknown) or '(empty)'} (choose from {', '.join(CHANNELS)})"
        )
    return names


def channel_field(names: list[str]) -> str | list[str]:
    """`channel` as the API takes it: one name, or the list rung all at once."""
    return names[0] if len(names) == 1 else names


def route_options(parser: argparse.ArgumentParser, *, default: str = "") -> None:
    """`--channel a,b` (all at once) or `--fallback a,b` (in turn), not both."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--channel",
        type=channel_list,
        metavar="NAME[,NAME…]",
        help=f"how it rings: a channel, or several rung at once (webhook,email){default}",
    )
    group.add_argument(
        "--fallback",
        type=channel_list,
        metavar="NAME,NAME[,…]",
        help="a chain tried in turn: the next only when every destination of the one before "
        "failed for good (apns,sms)",
    )


def route_fields(args: argparse.Namespace) -> dict[str, Any]:
    """The body's `channel` or `fallback` from the options given (empty: none was)."""
    if args.fallback is not None:
        return {"fallback": args.fallback}
    if args.channel is not None:
        return {"channel": channel_field(args.channel)}
    return {}


def register(subparsers: Any) -> None:
    _register_add(subparsers)
    _register_list(subparsers)
    show = add_command(
        subparsers,
        "show",
        show_reminder,
        summary="show one reminder",
        examples="  tocsin show 06gnwn92027gfgz1\n  tocsin show 06gnwn92027gfgz1 --json | jq .next",
    )
    show.add_argument("id", help="the reminder's id")
    _register_snooze(subparsers)
    _register_edit(subparsers)
    cancel = add_command(
        subparsers,
        "cancel",
        cancel_reminder,
        summary="cancel a pending reminder (for a series, every ring still to come)",
        examples="  tocsin cancel 06gnwn92027gfgz1",
    )
    cancel.add_argument("id", help="the reminder's id")
    done = add_command(
        subparsers,
        "done",
        mark_done,
        summary="mark a ring done (a reminder rung until done stops nagging)",
        examples="  tocsin done 06gnwn92027gfgz1.1793019600",
    )
    done.add_argument("firing", help="the ring's id (`tocsin firings ID` lists them)")


def schedule_options(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
    """`--when`, or `--at` and `--repeat`; `--zone`: the schedule, as `add`, `edit` and `next`
    take it. Times are sent as typed: the server reads them as it reads the API's `at`."""
    parser.add_argument(
        "--when",
        help='a time ("tomorrow 9am") or a repeat ("every Monday 9:00"): the server tells '
        "which; instead of --at and --repeat",
    )
    parser.add_argument(
        "--at",
        help="when: 18:00 or 6pm (the next one in the zone), tomorrow 9am, Friday at 17:00, "
        "Dec 24 6pm, in 10 minutes or +10m (from now), 2026-12-24T18:00 (local to the zone) "
        "or an instant (2026-12-24T17:00Z); with --repeat, its first day",
    )
    parser.add_argument("--repeat", help='a phrase ("every Monday 9am") or an RRULE')
    zone_default = " (default TOCSIN_ZONE, else this machine's zone, else UTC)" if defaults else ""
    parser.add_argument("--zone", help=f"an IANA time zone: Europe/Paris{zone_default}")


def _register_add(subparsers: Any) -> None:
    parser = add_command(
        subparsers,
        "add",
        add_reminder,
        summary="save a reminder",
        examples="""\
  tocsin add "call mom" --at 18:00 --zone Europe/Paris --channel email --owner ana
  tocsin add "dentist" --when "next Friday at 9:30"
  tocsin add "pills" --at 8:00 --channel apns,email
  tocsin add "pay rent" --at 9:00 --fallback apns,sms
  tocsin add "water the plants" --repeat "every Monday 9:00"
  tocsin add "tea" --at +10m --freshness 1m --json | jq -r .id
  tocsin add "bins out" --repeat "every Tue 19:00" --list 06h2t0k5f07g6e1x9q3d --assignee ben
  tocsin add "bins" --arrive 06h2t0k5f07g6e1x9q3d --after 17:00 --once day""",
    )
    parser.add_argument("text", help="what to say when it rings")
    schedule_options(parser, defaults=True)
    place_options(parser)
    route_options(parser, default=f"; default TOCSIN_CHANNEL, else {DEFAULT_CHANNEL}")
    owner_option(parser, "reminder")
    parser.add_argument("--freshness", help="how late a ring may still go out (default 10m)")
    parser.add_argument("--priority", choices=PRIORITIES, help=PRIORITY_HELP)
    quiet_hours_option(parser)
    alert_option(parser)
    until_done_options(parser)
    parser.add_argument("--metadata", help="your own JSON object, returned as given")
    parser.add_argument(
        "--list", dest="list_id", help="a shared list's id: the reminder is the list's"
    )
    parser.add_argument("--assignee", help="with --list: the one member it rings")


def quiet_hours_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--ignore-quiet-hours",
        action=argparse.BooleanOptionalAction,
        help="a bulk ring goes through the owner's quiet hours instead of waiting until they "
        "end (--no-ignore-quiet-hours: it waits, the default)",
    )


def alert_option(parser: argparse.ArgumentParser, *, edit: bool = False) -> None:
    parser.add_argument(
        "--alert",
        dest="alerts",
        action="append",
        metavar="LEAD",
        help="an early alert, this long before each ring: 1d (the day before at the same "
        "local time), 2h, 15m; repeat it for more" + ("; replaces its alerts" if edit else ""),
    )
    if edit:
        parser.add_argument(
            "--no-alerts",
            dest="alerts",
            action="store_const",
            const=[],
            help="remove its early alerts",
        )


def until_done_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--until-done",
        metavar="EVERY",
        help="ring again this often (5m) after each ring until it is marked done "
        "(tocsin done FIRING)",
    )
    parser.add_argument(
        "--until-done-max", type=int, metavar="N", help="ring again at most N times (default 6)"
    )


def place_options(parser: argparse.ArgumentParser) -> None:
    """`--arrive PLACE` or `--leave PLACE`, with `--after`, `--before` and `--once`: a
    reminder that rings at a place instead of a time."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--arrive", metavar="PLACE", help="ring when arriving at this place")
    where.add_argument("--leave", metavar="PLACE", help="ring when leaving this place")
    parser.add_argument("--after", metavar="HH:MM", help="with a place: only from then on")
    parser.add_argument("--before", metavar="HH:MM", help="with a place: only before then")
    parser.add_argument(
        "--once", choices=("day", "ever"), help="with a place: at most once a day, or ever"
    )


def _on(args: argparse.Namespace) -> dict[str, Any] | None:
    """The API's `on` of `--arrive`/`--leave` and their options, or None."""
    place = args.arrive or args.leave
    if place is None:
        if args.after or args.before or args.once:
            raise usage_error("--after, --before and --once need --arrive or --leave")
        return None
    if args.at is not None or args.repeat is not None or args.when is not None:
        raise usage_error("give a place (--arrive, --leave) or a time, not both")
    on = {"place": place, "event": "arrive" if args.arrive else "leave"}
    given = {"after": args.after, "before": args.before, "once": args.once}
    return on | {k: v for k, v in given.items() if v is not None}


def add_reminder(api: Api, args: argparse.Namespace) -> int:
    on = _on(args)
    if on is None and args.at is None and args.repeat is None and args.when is None:
        raise usage_error("give --when, or --at, --repeat or both (or --arrive, --leave)")
    zone = args.zone or default_zone()
    route = route_fields(args) or {
        "channel": channel_field(_env_channels() or [DEFAULT_CHANNEL]),
    }
    body: dict[str, Any] = {
        "text": args.text,
        **route,
        "zone": zone,
        # A list's reminder is the list's: no owner beside it.
        "owner": owner_of(args, api) if args.list_id is None else args.owner,
        "list": args.list_id,
        "assignee": args.assignee,
        "at": args.at,
        "repeat": args.repeat,
        "when": args.when,
        "on": on,
        "freshness": args.freshness,
        "priority": args.priority,
        "ignore_quiet_hours": args.ignore_quiet_hours,
        "alerts": args.alerts,
        "until_done": args.until_done,
        "until_done_max": args.until_done_max,
        "metadata": metadata(args.metadata),
    }
    # A fresh key per run makes a retry after a lost answer safe: the server replays its
    # first answer instead of saving the reminder twice.
    saved = api.request(
        "POST",
        "/v1/reminders",
        json={k: v for k, v in body.items() if v is not None},
        headers={"Idempotency-Key": f"cli-add-{uuid.uuid4()}"},
        retry=True,
    ).body
    for line in fmt.warnings_lines(saved):
        print(line, file=sys.stderr)
    return print_reminder(saved, args)


def _env_channels() -> list[str] | None:
    value = os.environ.get("TOCSIN_CHANNEL")
    if not value:
        return None
    try:
        return channel_list(value)
    except argparse.ArgumentTypeError as error:
        raise usage_error(f"TOCSIN_CHANNEL: {error}") from None


def metadata(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError as error:
        raise usage_error(f"--metadata is not JSON: {error}") from None
    if not isinstance(value, dict):
        raise usage_error('--metadata must be a JSON object: {"key": "value"}')
    return value


def print_reminder(reminder: dict[str, Any], args: argparse.Namespace) -> int:
    if args.json:
        fmt.emit_json(reminder)
    else:
        print(fmt.reminder_details(reminder))
    return OK


def _register_list(subparsers: Any) -> None:
    parser = add_command(
        subparsers,
        "list",
        list_reminders,
        summary="list an owner's reminders, oldest first",
        examples="""\
  tocsin list --owner ana
  tocsin list --owner ana --status pending --all
  tocsin list --owner ana --json | jq -r '.reminders[].id'""",
    )
    owner_option(parser, "reminders")
    parser.add_argument("--status", choices=[s.value for s in ReminderStatus])
    parser.add_argument("--all", action="store_true", help="every page, not only the first")
    parser.add_argument(
        "--limit", type=int, default=50, help="reminders a page, 1-200 (default 50)"
    )
    parser.add_argument("--cursor", help="the page to start from (printed after a page)")
    parser.add_argument("--list", dest="list_id", help="a shared list's reminders, by its id")


def list_reminders(api: Api, args: argparse.Namespace) -> int:
    owner = owner_of(args, api) if args.list_id is None else args.owner
    query = {"owner": owner, "list": args.list_id, "status": args.status}
    if args.all:
        found = list(api.pages("/v1/reminders", "reminders", **query))
        cursor = None
    else:
        page = api.get("/v1/reminders", limit=args.limit, cursor=args.cursor, **query).body
        found, cursor = page["reminders"], page["next_cursor"]
    answer = {"reminders": found, "next_cursor": cursor}
    fmt.print_found(answer, found, fmt.reminders_table, empty="no reminders", as_json=args.json)
    if cursor and not args.json:
        print(f"more: tocsin list --cursor {cursor} (or --all)", file=sys.stderr)
    return OK


def show_reminder(api: Api, args: argparse.Namespace) -> int:
    return print_reminder(api.get(f"/v1/reminders/{args.id}").body, args)


def _register_snooze(subparsers: Any) -> None:
    parser = add_command(
        subparsers,
        "snooze",
        snooze_reminder,
        summary="ring a reminder again later (a series gets a new one-off reminder)",
        examples="""\
  tocsin snooze 06gnwn92027gfgz1 10m
  tocsin snooze 06gnwn92027gfgz1 --until 18:00     # the next 18:00 in the reminder's zone
  tocsin snooze 06gnwn92027gfgz1 --until 2026-12-24T09:00""",
    )
    parser.add_argument("id", help="the reminder's id")
    parser.add_argument("duration", nargs="?", help="how long: 90s, 10m, 1h30m, 2d")
    parser.add_argument(
        "--until", help="when instead: 18:00, tomorrow 9am, a local time or an instant"
    )


def snooze_reminder(api: Api, args: argparse.Namespace) -> int:
    if (args.duration is None) == (args.until is None):
        raise usage_error("give a duration (10m) or --until, not both")
    # `--until` is read on the reminder's own zone's clock, by the server.
    body = {"snooze": args.duration} if args.duration is not None else {"snooze_until": args.until}
    answer = api.request("POST", f"/v1/reminders/{args.id}/snooze", json=body)
    if not args.json:
        new = answer.status == 201
        print(f"snoozed into a new reminder {answer.body['id']}" if new else "moved")
    return print_reminder(answer.body, args)


EDITABLE = (
    "text",
    "at",
    "repeat",
    "when",
    "zone",
    "freshness",
    "priority",
    "ignore_quiet_hours",
    "alerts",
    "until_done",
    "until_done_max",
)


def _register_edit(subparsers: Any) -> None:
    parser = add_command(
        subparsers,
        "edit",
        edit_reminder,
        summary="change a reminder (refused if someone else changed it since it was read)",
        examples="""\
  tocsin edit 06gnwn92027gfgz1 --repeat "daily 18:00"
  tocsin edit 06gnwn92027gfgz1 --text "call mom and dad" --at 19:30 --zone Europe/Paris
  tocsin edit 06gnwn92027gfgz1 --fallback apns,email
  tocsin edit 06gnwn92027gfgz1 --assignee ben""",
    )
    parser.add_argument("id", help="the reminder's id")
    parser.add_argument("--text", help="what to say")
    schedule_options(parser, defaults=False)
    route_options(parser)
    parser.add_argument("--freshness", help="how late a ring may still go out")
    parser.add_argument("--priority", choices=PRIORITIES, help=PRIORITY_HELP)
    quiet_hours_option(parser)
    alert_option(parser, edit=True)
    until_done_options(parser)
    parser.add_argument("--metadata", help="a JSON object (null clears it)")
    parser.add_argument(
        "--assignee", help="a list's reminder: the one member it rings (everyone: all who joined)"
    )


def edit_reminder(api: Api, args: argparse.Namespace) -> int:
    """Read for the version (ETag), then change with If-Match: an edit made from a stale
    read is refused (412), not applied over someone else's."""
    changes = {name: getattr(args, name) for name in EDITABLE if getattr(args, name) is not None}
    changes |= route_fields(args)
    if args.metadata is not None:
        changes["metadata"] = None if args.metadata == "null" else metadata(args.metadata)
    if args.assignee is not None:
        changes["assignee"] = None if args.assignee == "everyone" else args.assignee
    if not changes:
        raise usage_error(
            "nothing to change: give --text, --when, --at, --repeat, --zone, --channel …"
        )
    current = api.get(f"/v1/reminders/{args.id}")
    headers = {"If-Match": current.headers.get("ETag", "")}
    try:
        saved = api.request("PATCH", f"/v1/reminders/{args.id}", json=changes, headers=headers)
    except ClientError as error:
        if error.problem.get("status") == 412:
            error.problem["detail"] = (
                "someone changed it after it was read; nothing was saved: "
                f"look again (tocsin show {args.id}) and retry"
            )
        raise
    return print_reminder(saved.body, args)


def mark_done(api: Api, args: argparse.Namespace) -> int:
    marked = api.request("POST", f"/v1/firings/{args.firing}/done").body
    if args.json:
        fmt.emit_json(marked)
    else:
        print(f"done {marked['id']} at {marked['done_at']}")
    return OK


def cancel_reminder(api: Api, args: argparse.Namespace) -> int:
    answer = api.request("DELETE", f"/v1/reminders/{args.id}")
    ringing = answer.body.get("last_firing") if answer.status == 200 else None
    if args.json:
        fmt.emit_json({"id": args.id, "status": "cancelled", "ringing": ringing})
    elif ringing is not None:
        print(f"cancelled {args.id}; its ring due {ringing['due']} is already on its way")
    else:
        print(f"cancelled {args.id}")
    return OK
