"""The `tocsin` command line: one module per command, each with `register(subparsers)`.

A command module adds its parser with `register`, and sets `handler` on it: a function that
takes the parsed arguments and returns the exit status.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from tocsin import __version__
from tocsin.settings_core import SettingsInvalid

# `client` registers the commands that call a server's API: add, list, show, snooze, edit,
# cancel, next, firings, contacts, import, export.
COMMANDS = (
    "serve",
    "api",
    "worker",
    "migrate",
    "rezone",
    "keys",
    "config",
    "bench",
    "chaos",
    "client",
)
CLIENT_COMMANDS = frozenset(
    {"add", "list", "show", "snooze", "edit", "cancel", "next", "firings", "contacts"}
    | {"import", "export"}
)


def build_parser(modules: Sequence[str] = COMMANDS) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tocsin", description="Reminders that ring on time.")
    parser.add_argument("--version", action="version", version=f"tocsin {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in modules:
        importlib.import_module(f"tocsin.cli.{name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # A client command loads only the client's modules: the server's (FastAPI, uvicorn, every
    # channel) take ~1.2 s to import, three times what the client's own take, and scripts
    # call the client in loops.
    client_only = bool(argv) and argv[0] in CLIENT_COMMANDS
    parser = build_parser(("client",) if client_only else COMMANDS)
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        status: int = handler(args)
    except SettingsInvalid as error:  # a usage error, said on one line: no traceback
        print(f"tocsin {args.command}: {error}", file=sys.stderr)
        return 2
    return status
