"""`tocsin lists show | create | rename | delete | invite | accept | remove`: shared lists and
their members (a list's reminders: `tocsin add --list`, `tocsin list --list`, `tocsin import
--list`)."""

from __future__ import annotations

import argparse
from typing import Any

from tocsin.cli import client_format as fmt
from tocsin.cli.client_command import add_command
from tocsin.cli.client_http import OK, Api

ROLES = ("owner", "editor", "viewer")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "lists",
        help="shared lists: their reminders ring every member who joined",
        description="Shared lists: a list's reminders ring every member who joined it (or "
        "the one they are assigned to), each on his own contacts. A viewer reads them, an "
        "editor also saves and changes them, an owner also manages the members. An invited "
        "member gets no ring until he accepts. `tocsin lists SUBCOMMAND --help` for each "
        "one's options.",
        epilog="examples:\n  tocsin lists create Household\n"
        "  tocsin lists invite 06h2t0k5f07g6e1x9q3d ben --role editor\n"
        "  tocsin lists accept 06h2t0k5f07g6e1x9q3d ben\n"
        '  tocsin add "bins out" --at 19:00 --list 06h2t0k5f07g6e1x9q3d\n'
        "  tocsin lists remove 06h2t0k5f07g6e1x9q3d ben\n"
        "  tocsin lists delete 06h2t0k5f07g6e1x9q3d",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="lists_command", metavar="SUBCOMMAND", required=True)
    show = _command(commands, "show", show_lists, "the lists you see, or one with its members")
    show.add_argument("id", nargs="?", help="one list's id (none: every list you see)")
    show.add_argument("--member", help="the lists this member is on (an API key)")
    create = _command(commands, "create", create_list, "make a list; you are its first owner")
    create.add_argument("name", help="what to call it: Household")
    create.add_argument("--owner", help="its first owner (an API key; a token is its own)")
    rename = _command(commands, "rename", rename_list, "rename a list (a list owner)")
    rename.add_argument("id", help="the list's id")
    rename.add_argument("name", help="its new name")
    delete = _command(
        commands, "delete", delete_list, "delete a list and cancel its reminders (a list owner)"
    )
    delete.add_argument("id", help="the list's id")
    for name, run, summary, who in (
        ("invite", invite_member, "invite someone, or change a member's role", "an owner's name"),
        ("accept", accept_invitation, "accept an invitation to a list", "who accepts"),
        ("remove", remove_member, "leave a list, or remove a member", "who leaves, or goes"),
    ):
        parser = _command(commands, name, run, summary)
        parser.add_argument("id", help="the list's id")
        parser.add_argument("member", help=f"{who} (ben)")
        if name == "invite":
            parser.add_argument("--role", choices=ROLES, default="editor", help="default editor")


def _command(commands: Any, name: str, run: Any, summary: str) -> argparse.ArgumentParser:
    examples = {
        "show": "  tocsin lists show\n  tocsin lists show 06h2t0k5f07g6e1x9q3d",
        "create": "  tocsin lists create Household",
        "rename": "  tocsin lists rename 06h2t0k5f07g6e1x9q3d Home",
        "delete": "  tocsin lists delete 06h2t0k5f07g6e1x9q3d",
        "invite": "  tocsin lists invite 06h2t0k5f07g6e1x9q3d ben --role viewer",
        "accept": "  tocsin lists accept 06h2t0k5f07g6e1x9q3d ben",
        "remove": "  tocsin lists remove 06h2t0k5f07g6e1x9q3d ben",
    }
    return add_command(
        commands, name, run, title=f"lists {name}", summary=summary, examples=examples[name]
    )


def show_lists(api: Api, args: argparse.Namespace) -> int:
    if args.id is not None:
        return _print(api.get(f"/v1/lists/{args.id}").body, args)
    found = api.get("/v1/lists", member=args.member).body
    fmt.print_found(found, found["lists"], fmt.lists_table, empty="no lists", as_json=args.json)
    return OK


def create_list(api: Api, args: argparse.Namespace) -> int:
    body = {"name": args.name, "owner": args.owner}
    made = api.request("POST", "/v1/lists", json={k: v for k, v in body.items() if v}).body
    return _print(made, args)


def rename_list(api: Api, args: argparse.Namespace) -> int:
    return _print(api.request("PATCH", f"/v1/lists/{args.id}", json={"name": args.name}).body, args)


def delete_list(api: Api, args: argparse.Namespace) -> int:
    api.request("DELETE", f"/v1/lists/{args.id}")
    if args.json:
        fmt.emit_json({"list": args.id, "deleted": True})
    else:
        print(f"list {args.id} is deleted; its reminders are cancelled")
    return OK


def invite_member(api: Api, args: argparse.Namespace) -> int:
    path = f"/v1/lists/{args.id}/members/{args.member}"
    return _print(api.request("PUT", path, json={"role": args.role}).body, args)


def accept_invitation(api: Api, args: argparse.Namespace) -> int:
    path = f"/v1/lists/{args.id}/members/{args.member}/accept"
    return _print(api.request("POST", path).body, args)


def remove_member(api: Api, args: argparse.Namespace) -> int:
    api.request("DELETE", f"/v1/lists/{args.id}/members/{args.member}")
    if args.json:
        fmt.emit_json({"list": args.id, "member": args.member, "removed": True})
    else:
        print(f"{args.member} is no longer on list {args.id}")
    return OK


def _print(shared: dict[str, Any], args: argparse.Namespace) -> int:
    if args.json:
        fmt.emit_json(shared)
    else:
        print(fmt.lists_table([shared]))
    return OK
