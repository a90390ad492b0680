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

COMMANDS = ("serve", "api", "worker", "migrate", "keys", "bench", "chaos")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tocsin", description="Reminders that ring on time.")
    parser.add_argument("--version", action="version", version=f"tocsin {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"tocsin.cli.{name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    status: int = handler(args)
    return status
