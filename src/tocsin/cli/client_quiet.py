"""`tocsin quiet-hours show | set | clear`: the span of an owner's day in which his bulk rings
wait."""

from __future__ import annotations

import argparse
from typing import Any

from tocsin.cli import client_format as fmt
from tocsin.cli.client_command import add_command, owner_option, required_owner
from tocsin.cli.client_http import OK, Api, usage_error


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "quiet-hours",
        help="an owner's quiet hours: bulk rings wait until they end",
        description="An owner's quiet hours: a span of his local day (22:00-07:00) in which "
        "bulk rings wait until it ends (and expire if they would go stale first); urgent "
        "rings go through. Each saver keeps its own: an app key's hold its reminders' rings, "
        "the owner's token's every ring of his. `tocsin quiet-hours SUBCOMMAND --help` for "
        "each one's options.",
        epilog="examples:\n  tocsin quiet-hours show --owner ana\n"
        "  tocsin quiet-hours set --owner ana 22:00-07:00 --zone Europe/Berlin\n"
        "  tocsin quiet-hours clear --owner ana",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="quiet_command", metavar="SUBCOMMAND", required=True)
    show = add_command(
        commands,
        "show",
        show_quiet_hours,
        title="quiet-hours show",
        summary="show an owner's quiet hours, each saver's, and whether they hold now",
        examples="  tocsin quiet-hours show --owner ana",
    )
    owner_option(show, "quiet hours")
    set_ = add_command(
        commands,
        "set",
        set_quiet_hours,
        title="quiet-hours set",
        summary="set the caller's quiet hours for an owner (replacing its own)",
        examples="  tocsin quiet-hours set --owner ana 22:00-07:00 --zone Europe/Berlin",
    )
    owner_option(set_, "quiet hours")
    set_.add_argument("span", metavar="HH:MM-HH:MM", help="start and end, local time: 22:00-07:00")
    set_.add_argument("--zone", required=True, help="the owner's time zone: Europe/Berlin")
    clear = add_command(
        commands,
        "clear",
        clear_quiet_hours,
        title="quiet-hours clear",
        summary="clear the caller's quiet hours for an owner",
        examples="  tocsin quiet-hours clear --owner ana",
    )
    owner_option(clear, "quiet hours")


def show_quiet_hours(api: Api, args: argparse.Namespace) -> int:
    owner = required_owner(args, api)
    found = api.request("GET", f"/v1/owners/{owner}/quiet-hours").body
    spans = found["quiet_hours"]
    empty = f"no quiet hours for {owner}"
    fmt.print_found(found, spans, fmt.quiet_hours_table, empty=empty, as_json=args.json)
    return OK


def set_quiet_hours(api: Api, args: argparse.Namespace) -> int:
    owner = required_owner(args, api)
    start, dash, end = args.span.partition("-")
    if not dash:
        raise usage_error(f"{args.span}: give the span as HH:MM-HH:MM (22:00-07:00)")
    body = {"start": start.strip(), "end": end.strip(), "zone": args.zone}
    saved = api.request("PUT", f"/v1/owners/{owner}/quiet-hours", json=body).body
    if args.json:
        fmt.emit_json(saved)
    else:
        print(fmt.quiet_hours_table([saved]))
    return OK


def clear_quiet_hours(api: Api, args: argparse.Namespace) -> int:
    owner = required_owner(args, api)
    api.request("DELETE", f"/v1/owners/{owner}/quiet-hours")
    if args.json:
        fmt.emit_json({"owner": owner, "cleared": True})
    else:
        print(f"cleared the quiet hours of {owner}")
    return OK
