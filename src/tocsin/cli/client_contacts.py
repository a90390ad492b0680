"""`tocsin contacts list | add | remove`: where an owner's rings go."""

from __future__ import annotations

import argparse
import json
from typing import Any

from tocsin.cli import client_format as fmt
from tocsin.cli.client_command import add_command, owner_option, required_owner
from tocsin.cli.client_http import OK, Api, usage_error

# The field each kind's one value goes in (docs/channels.md lists every kind's fields).
VALUE_FIELD = {
    "email": "address",
    "sms": "number",
    "apprise": "url",
    "webhook": "url",
    "apns": "token",
    "fcm": "token",
    "webpush": "subscription",
}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "contacts",
        help="an owner's contacts: where rings go",
        description="An owner's contacts: a reminder rings every enabled contact of its "
        "channel's kind. `tocsin contacts SUBCOMMAND --help` for each one's options.",
        epilog="examples:\n  tocsin contacts list --owner ana\n"
        "  tocsin contacts add --owner ana email ana@example.org\n"
        "  tocsin contacts remove --owner ana 06h2t0k5f07g6e1x9q3d",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="contacts_command", metavar="SUBCOMMAND", required=True)
    listing = add_command(
        commands,
        "list",
        list_contacts,
        title="contacts list",
        summary="list an owner's contacts, disabled ones included",
        examples="  tocsin contacts list --owner ana\n  tocsin contacts list --owner ana --json",
    )
    owner_option(listing, "contacts")
    listing.add_argument("--kind", choices=sorted(VALUE_FIELD), help="only this kind")
    _register_add(commands)
    remove = add_command(
        commands,
        "remove",
        remove_contact,
        title="contacts remove",
        summary="remove a contact",
        examples="  tocsin contacts remove --owner ana 06h2t0k5f07g6e1x9q3d",
    )
    owner_option(remove, "contact")
    remove.add_argument("id", help="the contact's id")


def _register_add(commands: Any) -> None:
    add = add_command(
        commands,
        "add",
        add_contact,
        title="contacts add",
        summary="add a contact",
        examples="""\
  tocsin contacts add --owner ana email ana@example.org
  tocsin contacts add --owner ana sms +33612345678 --label mobile
  tocsin contacts add --owner ana apprise ntfys://ntfy.sh/ana-reminders
  tocsin contacts add --owner ana webhook https://ana.example/hooks/tocsin
  tocsin contacts add --owner ana apns 3f2a… --field environment=sandbox""",
    )
    owner_option(add, "contact")
    add.add_argument("kind", choices=sorted(VALUE_FIELD), help="the channel it serves")
    add.add_argument(
        "value",
        help="the address, number, URL or device token (webpush: the subscription's JSON)",
    )
    add.add_argument("--label", help="a name for it: 'Ana's phone'")
    add.add_argument(
        "--field",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="another field of the kind (apns: environment, bundle_id)",
    )


def list_contacts(api: Api, args: argparse.Namespace) -> int:
    owner = required_owner(args, api)
    found = list(api.pages(f"/v1/owners/{owner}/contacts", "contacts", kind=args.kind))
    empty = f"no contacts for {owner}"
    fmt.print_found({"contacts": found}, found, fmt.contacts_table, empty=empty, as_json=args.json)
    return OK


def add_contact(api: Api, args: argparse.Namespace) -> int:
    owner = required_owner(args, api)
    body: dict[str, Any] = {"kind": args.kind, VALUE_FIELD[args.kind]: _value(args)}
    for pair in args.field:
        name, equals, value = pair.partition("=")
        if not equals:
            raise usage_error(f"--field {pair}: give NAME=VALUE")
        body[name] = value
    if args.label is not None:
        body["label"] = args.label
    saved = api.request("POST", f"/v1/owners/{owner}/contacts", json=body).body
    if args.json:
        fmt.emit_json(saved)
        return OK
    print(fmt.contacts_table([saved]))
    if saved.get("secret"):
        # Shown once, like an API key: the receiver needs it to check the signatures.
        print(f"signing secret (shown once; the receiver checks with it): {saved['secret']}")
    return OK


def _value(args: argparse.Namespace) -> Any:
    if args.kind != "webpush":
        return args.value
    try:
        return json.loads(args.value)
    except ValueError as error:
        raise usage_error(f"a webpush contact is the subscription's JSON: {error}") from None


def remove_contact(api: Api, args: argparse.Namespace) -> int:
    owner = required_owner(args, api)
    api.request("DELETE", f"/v1/owners/{owner}/contacts/{args.id}")
    if args.json:
        fmt.emit_json({"id": args.id, "removed": True})
    else:
        print(f"removed {args.id}")
    return OK
