"""`tocsin rezone`: after a tzdata upgrade, move the pending rings whose zone's rules changed."""

from __future__ import annotations

import argparse
import asyncio
import sys
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from tocsin.cli.startup import StartupError, add_database_arguments, open_ready_store
from tocsin.cli.startup import settings_from as server_settings
from tocsin.logging import configure_logging
from tocsin.rezone import RezoneReport, rezone
from tocsin.settings import Settings
from tocsin.time import format_duration


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "rezone",
        help="after a tzdata upgrade, move pending reminders whose zone's rules changed",
        description="Run once every process runs the upgraded tzdata package (each one "
        "warns at start until then). Finds the zones whose rules differ between the tzdata "
        "releases due times were worked out with and the one installed, works out the "
        "next ring of every pending reminder in them again, and moves those whose ring "
        "moved, each only on the version it read (a ring, edit or cancel that lands first "
        "wins; run it again if it says some did). Reports how many moved and by how much. "
        "Safe beside running servers and workers, and to run again.",
    )
    add_database_arguments(parser)
    parser.add_argument(
        "--dry-run", action="store_true", help="only report what would move; change nothing"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        settings = server_settings(args)
    except ValidationError as error:
        print(f"tocsin rezone: {error}", file=sys.stderr)
        return 2
    configure_logging(settings.log_level, settings.log_format)
    try:
        report = asyncio.run(_rezone(settings, migrate=args.migrate, dry_run=args.dry_run))
    except StartupError as error:
        print(f"tocsin rezone: {error}", file=sys.stderr)
        return 1
    print(describe(report, dry_run=args.dry_run))
    return 0


async def _rezone(settings: Settings, *, migrate: bool, dry_run: bool) -> RezoneReport:
    store = await open_ready_store(settings, migrate=migrate)
    try:
        return await rezone(store, now=datetime.now(UTC), dry_run=dry_run)
    finally:
        await store.close()


def describe(report: RezoneReport, *, dry_run: bool) -> str:
    """The report, a few lines for the operator."""
    before = ", ".join(report.recorded) or "no other release"
    lines = [
        f"tzdata {report.tzdata}; due times were also worked out with: {before}",
        f"zones whose rules changed: {report.zones}",
        f"pending reminders in them: {report.checked}",
    ]
    verb = "would move" if dry_run else "moved"
    shifts = ", ".join(
        f"{count} by {_signed(shift.total_seconds())}"
        for shift, count in sorted(report.shifts.items())
    )
    lines.append(f"{verb}: {report.moved}" + (f" ({shifts})" if shifts else ""))
    if report.raced:
        lines.append(
            f"left to a ring, edit or cancel that landed first: {report.raced} "
            "(run `tocsin rezone` again)"
        )
    if report.unreadable:
        lines.append(f"left as they are (no ring near the old one): {report.unreadable}")
    if not dry_run and not report.raced:
        lines.append(f"recorded: every pending due time is worked out with {report.tzdata}")
    return "\n".join(lines)


def _signed(seconds: float) -> str:
    sign = "-" if seconds < 0 else "+"
    return sign + format_duration(int(abs(seconds)))
