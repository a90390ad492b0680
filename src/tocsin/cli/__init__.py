"""The `tocsin` command line: one module per command, each with `register(subparsers)`.

A command module adds its parser with `register`, and sets `handler` on it: a function that
takes the parsed arguments and returns the exit status. Other installed distributions add
command modules of their own under the entry-point group `tocsin.commands` (the repository's
bench/ adds `bench` and `chaos`).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from importlib.metadata import entry_points

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
    "client",
)
CLIENT_COMMANDS = frozenset(
    {"add", "list", "show", "snooze", "edit", "cancel", "next", "firings", "contacts"}
    | {"import", "export"}
)
# The entry-point group of the commands other distributions add: `name = "module"`, a module
# with `register` as above.
ADDED_COMMANDS = "tocsin.commands"
# The commands of Tocsin's test tooling, which a server install does not have: asked for
# there, they say where they come from.
BENCH_COMMANDS = frozenset({"bench", "chaos"})
NO_BENCH = (
    "tocsin {command}: comes with tocsin-bench, Tocsin's test tooling, installed from its "
    "repository (make bench, or pip install -e ./bench); this install has no such command"
)


def added_commands() -> dict[str, str]:
    """The commands other installed distributions add: the module of each, by its name."""
    return {entry.name: entry.module for entry in entry_points(group=ADDED_COMMANDS)}


def build_parser(modules: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser of the commands that `modules` (module names) register; by default every
    command: Tocsin's own (`COMMANDS`) and those other installed distributions add."""
    if modules is None:
        modules = [f"tocsin.cli.{name}" for name in COMMANDS] + [*added_commands().values()]
    parser = argparse.ArgumentParser(prog="tocsin", description="Reminders that ring on time.")
    parser.add_argument("--version", action="version", version=f"tocsin {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in modules:
        importlib.import_module(module).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # A client command loads only the client's modules: the server's (FastAPI, uvicorn, every
    # channel) take ~1.2 s to import, three times what the client's own take, and scripts
    # call the client in loops.
    command = argv[0] if argv else ""
    if command in CLIENT_COMMANDS:
        parser = build_parser(["tocsin.cli.client"])
    elif command in BENCH_COMMANDS and command not in added_commands():
        print(NO_BENCH.format(command=command), file=sys.stderr)
        return 2
    else:
        parser = build_parser()
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
