"""The `tocsin` command line: one module per command, each with `register(subparsers)`.

A command module adds its parser with `register`, and sets `handler` on it: a function that
takes the parsed arguments and returns the exit status. `COMMANDS` names the module of each
command, and `main` imports only the one of the command it runs. Other installed
distributions add command modules of their own under the entry-point group
`tocsin.commands` (the repository's bench/ adds `bench` and `chaos`).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from tocsin import __version__


class Command(NamedTuple):
    module: str  # the module whose `register` adds the command
    summary: str  # its line in `tocsin --help`, as its module's `help=`


CLIENT = "tocsin.cli.client"
# Every command of Tocsin's own, in the order `tocsin --help` lists them. `main` imports only
# the module of the command it runs, and none for `tocsin --help`: the server's modules
# (FastAPI, uvicorn, every channel) took ~0.8 s of CPU to import before any command ran.
COMMANDS: Mapping[str, Command] = {
    "serve": Command("tocsin.cli.serve", "run the API (and the scheduler) in one process"),
    "api": Command("tocsin.cli.api", "run the HTTP API without the scheduler"),
    "worker": Command("tocsin.cli.worker", "run the scheduler and delivery (no API)"),
    "migrate": Command("tocsin.cli.migrate", "apply the schema migrations the database lacks"),
    "rezone": Command(
        "tocsin.cli.rezone",
        "after a tzdata upgrade, move pending reminders whose zone's rules changed",
    ),
    "keys": Command("tocsin.cli.keys", "API keys and owner tokens"),
    "config": Command(
        "tocsin.cli.config",
        "print the effective settings (secrets masked), or the reference of them all",
    ),
    # The client of a running server's API: one module registers them all.
    "add": Command(CLIENT, "save a reminder"),
    "list": Command(CLIENT, "list an owner's reminders, oldest first"),
    "show": Command(CLIENT, "show one reminder"),
    "snooze": Command(CLIENT, "ring a reminder again later (a series gets a new one-off reminder)"),
    "edit": Command(
        CLIENT, "change a reminder (refused if someone else changed it since it was read)"
    ),
    "cancel": Command(CLIENT, "cancel a pending reminder (for a series, every ring still to come)"),
    "done": Command(CLIENT, "mark a ring done (a reminder rung until done stops nagging)"),
    "next": Command(CLIENT, "preview when a schedule rings, without saving anything"),
    "firings": Command(CLIENT, "a reminder's rings, newest first, with their delivery state"),
    "contacts": Command(CLIENT, "an owner's contacts: where rings go"),
    "places": Command(CLIENT, "an owner's places: the geofences their device watches"),
    "quiet-hours": Command(CLIENT, "an owner's quiet hours: bulk rings wait until they end"),
    "lists": Command(CLIENT, "shared lists: their reminders ring every member who joined"),
    "import": Command(CLIENT, "save reminders from a file of JSON lines or CSV, 1,000 a request"),
    "export": Command(
        CLIENT, "print an owner's reminders, or a list's, as JSON lines (what import reads)"
    ),
}
CLIENT_COMMANDS = frozenset(name for name, command in COMMANDS.items() if command.module == CLIENT)
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
    # Imported here, for a command that is not Tocsin's own: it takes ~30 ms (email, zipfile).
    from importlib.metadata import entry_points

    return {entry.name: entry.module for entry in entry_points(group=ADDED_COMMANDS)}


def build_parser(modules: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser of the commands that `modules` (module names) register; by default every
    command: Tocsin's own (`COMMANDS`) and those other installed distributions add."""
    if modules is None:
        modules = [*dict.fromkeys(c.module for c in COMMANDS.values()), *added_commands().values()]
    parser, subparsers = _parser()
    for module in modules:
        importlib.import_module(module).register(subparsers)
    return parser


def listing(added: Mapping[str, str]) -> argparse.ArgumentParser:
    """The parser of `tocsin` without a command (`--help`, `--version`, a misspelt one): it
    lists every command, Tocsin's own and those `added` (`added_commands`), and imports none
    of their modules."""
    parser, subparsers = _parser()
    for name, command in COMMANDS.items():
        subparsers.add_parser(name, help=command.summary)
    for name, module in added.items():
        subparsers.add_parser(name, help=f"added by {module.partition('.')[0]}: see its --help")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[0] if argv else ""
    if command in COMMANDS:
        parser = build_parser([COMMANDS[command].module])
    elif command in (added := added_commands()):
        parser = build_parser([added[command]])
    elif command in BENCH_COMMANDS:
        print(NO_BENCH.format(command=command), file=sys.stderr)
        return 2
    else:
        parser = listing(added)
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        status: int = handler(args)
    except Exception as error:
        # Imported only now: settings_core (pydantic, the SQLite URL type) takes ~0.2 s, and
        # only a command that read the settings can have raised it.
        from tocsin.settings_core import SettingsInvalid

        if not isinstance(error, SettingsInvalid):
            raise
        print(f"tocsin {args.command}: {error}", file=sys.stderr)  # a usage error: no traceback
        return 2
    return status


def _parser() -> tuple[argparse.ArgumentParser, Any]:
    parser = argparse.ArgumentParser(prog="tocsin", description="Reminders that ring on time.")
    parser.add_argument("--version", action="version", version=f"tocsin {__version__}")
    return parser, parser.add_subparsers(dest="command", metavar="COMMAND")
