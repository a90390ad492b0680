"""`tocsin api`: the HTTP API alone, for deployments that run workers apart (PostgreSQL)."""

from __future__ import annotations

import argparse
from typing import Any

from tocsin.cli.serve import add_server_arguments, serve


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "api",
        help="run the HTTP API without the scheduler",
        description="Run the HTTP API only; run `tocsin worker` processes to ring reminders. "
        "On PostgreSQL it refuses an old schema unless given --migrate.",
    )
    add_server_arguments(parser)
    parser.set_defaults(handler=run_api)


def run_api(args: argparse.Namespace) -> int:
    return serve(args, services=[])
