"""`tocsin places list | add | edit | remove | arrive | leave`: an owner's places ("home",
"the office"), and the crossings his device reports."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import Any

from tocsin.cli import client_format as fmt
from tocsin.cli.client_command import add_command, owner_option, required_owner
from tocsin.cli.client_http import OK, Api, usage_error


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "places",
        help="an owner's places: the geofences their device watches",
        description="An owner's places: a name and a circle on the earth (latitude and "
        "longitude in degrees, a radius in metres). `tocsin places SUBCOMMAND --help` for "
        "each one's options.",
        epilog="examples:\n  tocsin places list --owner ana\n"
        "  tocsin places list --owner ana --near 52.52,13.405 --limit 20\n"
        "  tocsin places add --owner ana Home 52.52,13.405 --radius 150\n"
        "  tocsin places edit --owner ana 06h2t0k5f07g6e1x9q3d --radius 200\n"
        "  tocsin places remove --owner ana 06h2t0k5f07g6e1x9q3d\n"
        "  tocsin places arrive --owner ana 06h2t0k5f07g6e1x9q3d",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="places_command", metavar="SUBCOMMAND", required=True)
    listing = add_command(
        commands,
        "list",
        list_places,
        title="places list",
        summary="list an owner's places, or the nearest to a point",
        examples="  tocsin places list --owner ana\n"
        "  tocsin places list --owner ana --near 52.52,13.405 --limit 20",
    )
    owner_option(listing, "places")
    listing.add_argument(
        "--near",
        metavar="LAT,LON",
        help="the places nearest to this point first, with the distance to each",
    )
    listing.add_argument("--limit", type=int, default=20, help="with --near: how many (20)")
    add = add_command(
        commands,
        "add",
        add_place,
        title="places add",
        summary="add a place",
        examples="  tocsin places add --owner ana Home 52.52,13.405 --radius 150",
    )
    owner_option(add, "place")
    add.add_argument("name", help="what the owner calls it: Home")
    add.add_argument("centre", metavar="LAT,LON", help="its centre, in degrees")
    add.add_argument("--radius", type=int, help="metres, 50 to 100,000 (150)")
    edit = add_command(
        commands,
        "edit",
        edit_place,
        title="places edit",
        summary="change a place's name, centre or radius",
        examples="  tocsin places edit --owner ana 06h2t0k5f07g6e1x9q3d --radius 200",
    )
    owner_option(edit, "place")
    edit.add_argument("id", help="the place's id")
    edit.add_argument("--name", help="a new name")
    edit.add_argument("--centre", metavar="LAT,LON", help="a new centre, in degrees")
    edit.add_argument("--radius", type=int, help="a new radius in metres")
    remove = add_command(
        commands,
        "remove",
        remove_place,
        title="places remove",
        summary="remove a place",
        examples="  tocsin places remove --owner ana 06h2t0k5f07g6e1x9q3d",
    )
    owner_option(remove, "place")
    remove.add_argument("id", help="the place's id")
    for event in ("arrive", "leave"):
        crossing = add_command(
            commands,
            event,
            report_crossing,
            title=f"places {event}",
            summary=f"report that the owner's device {event}s a place: ring its reminders",
            examples=f"  tocsin places {event} --owner ana 06h2t0k5f07g6e1x9q3d",
        )
        owner_option(crossing, "place")
        crossing.add_argument("id", help="the place's id")
        crossing.add_argument(
            "--at", metavar="INSTANT", help="when, with its offset (default: now)"
        )
        crossing.set_defaults(event=event)


def list_places(api: Api, args: argparse.Namespace) -> int:
    owner = required_owner(args, api)
    path = f"/v1/owners/{owner}/places"
    if args.near is not None:
        found = api.request("GET", path, params={"near": args.near, "limit": args.limit})
        places = found.body["places"]
    else:
        places = list(api.pages(path, "places"))
    empty = f"no places for {owner}"
    fmt.print_found({"places": places}, places, fmt.places_table, empty=empty, as_json=args.json)
    return OK


def add_place(api: Api, args: argparse.Namespace) -> int:
    owner = required_owner(args, api)
    latitude, longitude = _centre(args.centre)
    body: dict[str, Any] = {"name": args.name, "latitude": latitude, "longitude": longitude}
    if args.radius is not None:
        body["radius_m"] = args.radius
    saved = api.request("POST", f"/v1/owners/{owner}/places", json=body).body
    _show(saved, args)
    return OK


def edit_place(api: Api, args: argparse.Namespace) -> int:
    owner = required_owner(args, api)
    body: dict[str, Any] = {}
    if args.name is not None:
        body["name"] = args.name
    if args.centre is not None:
        body["latitude"], body["longitude"] = _centre(args.centre)
    if args.radius is not None:
        body["radius_m"] = args.radius
    if not body:
        raise usage_error("places edit: give --name, --centre or --radius")
    saved = api.request("PATCH", f"/v1/owners/{owner}/places/{args.id}", json=body).body
    _show(saved, args)
    return OK


def remove_place(api: Api, args: argparse.Namespace) -> int:
    owner = required_owner(args, api)
    api.request("DELETE", f"/v1/owners/{owner}/places/{args.id}")
    if args.json:
        fmt.emit_json({"id": args.id, "removed": True})
    else:
        print(f"removed {args.id}")
    return OK


def report_crossing(api: Api, args: argparse.Namespace) -> int:
    owner = required_owner(args, api)
    at = args.at or datetime.now(UTC).isoformat(timespec="seconds")
    path = f"/v1/owners/{owner}/places/{args.id}/events"
    answer = api.request("POST", path, json={"event": args.event, "at": at}).body
    if args.json:
        fmt.emit_json(answer)
        return OK
    for ring in answer["rang"]:
        print(f"rang {ring['reminder']} ({ring['firing']})")
    for passed in answer["passed"]:
        print(f"passed {passed['reminder']}: {passed['reason']}")
    if not answer["rang"] and not answer["passed"]:
        print(f"no reminder {args.event}s at {args.id}")
    return OK


def _centre(text: str) -> tuple[float, float]:
    """LAT,LON as two numbers; the server says whether they lie on the earth."""
    parts = text.split(",")
    try:
        if len(parts) != 2:
            raise ValueError
        return float(parts[0]), float(parts[1])
    except ValueError:
        raise usage_error(f"{text}: give the centre as LAT,LON in degrees (52.52,13.405)") from None


def _show(saved: dict[str, Any], args: argparse.Namespace) -> None:
    if args.json:
        fmt.emit_json(saved)
    else:
        print(fmt.places_table([saved]))
