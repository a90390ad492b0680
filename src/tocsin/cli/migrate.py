"""`tocsin migrate`: apply the schema migrations the database lacks, or say how far they are."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from tocsin.errors import StoreError
from tocsin.masking import masked
from tocsin.settings import load_settings
from tocsin.store import open_store
from tocsin.store.migrations import BATCH_PAGES, Migration, MigrationState


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "migrate",
        help="apply the schema migrations the database lacks",
        description="Apply, in order, every schema migration the database lacks. Safe to run "
        "from several processes at once; run it once per release before starting it. A "
        "migration of a large table runs in batches with the service running, and goes on "
        "where it stopped when run again.",
    )
    parser.add_argument(
        "--db", metavar="URL", help="database URL (default: TOCSIN_DATABASE_URL or ./tocsin.db)"
    )
    parser.add_argument(
        "--batch-pages",
        type=int,
        default=BATCH_PAGES,
        metavar="N",
        help=f"pages of a table a batch changes, each batch a transaction (default {BATCH_PAGES})",
    )
    doing = parser.add_mutually_exclusive_group()
    doing.add_argument(
        "--before-upgrade",
        action="store_true",
        help="leave the migrations that would stop the running release's processes "
        "(PostgreSQL): run `tocsin migrate` again once every process runs this release",
    )
    doing.add_argument(
        "--status",
        action="store_true",
        help="change nothing: say which migrations are applied, under way (how far) or to apply",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    settings = load_settings()  # checked even with --db: a bad one must not wait for `serve`
    url: str = args.db or settings.database_url
    try:
        if args.status:
            for line in describe(asyncio.run(_states(url))):
                print(line)
            return 0
        if args.batch_pages < 1:
            raise ValueError(f"--batch-pages must be 1 or more (got {args.batch_pages})")
        applied, states = asyncio.run(
            _migrate(url, before_upgrade=args.before_upgrade, batch_pages=args.batch_pages)
        )
    except (StoreError, ValueError) as error:
        # The message may quote the URL it was given (a keyword string, unsupported).
        print(f"tocsin migrate: {masked(str(error))}", file=sys.stderr)
        return 1
    names = {state.migration.version: _name(state.migration) for state in states}
    print(
        "applied migrations: " + ", ".join(names[version] for version in applied)
        if applied
        else "up to date"
    )
    for state in states:
        if not state.applied:
            print(f"{_name(state.migration)}: {_WAITS}")
    return 0


_WAITS = (
    "applies after the upgrade: run `tocsin migrate` once no process of an earlier release runs"
)


def describe(states: list[MigrationState]) -> list[str]:
    """`--status`: how many are applied, then a line for each that is not."""
    applied = [state for state in states if state.applied]
    lines = [
        f"{len(applied)} of {len(states)} migrations applied"
        + (f", the last {_name(applied[-1].migration)}" if applied else "")
    ]
    for state in states:
        if not state.applied:
            lines.append(f"{_name(state.migration)}: {_progress(state)}")
    return lines


def _progress(state: MigrationState) -> str:
    steps = state.migration.steps()
    if state.steps_ended == 0 and state.pages is None:
        return _WAITS if state.migration.after_upgrade else "to apply"
    step = steps[state.steps_ended]
    said = f"step {state.steps_ended + 1} of {len(steps)} ({step.how})"
    if state.pages is not None and state.next_page is not None:
        share = state.next_page / state.pages if state.pages else 1.0
        said += f": {state.next_page:,} of {state.pages:,} pages ({share:.0%})"
        if state.rows_left is not None:
            said += f", about {state.rows_left:,} rows left"
    return said


def _name(migration: Migration) -> str:
    return f"{migration.version:04d}_{migration.name}"


async def _migrate(
    url: str, *, before_upgrade: bool, batch_pages: int
) -> tuple[list[int], list[MigrationState]]:
    store = await open_store(url)
    try:
        applied = await store.migrate(before_upgrade=before_upgrade, batch_pages=batch_pages)
        return applied, await store.migration_states()
    finally:
        await store.close()


async def _states(url: str) -> list[MigrationState]:
    store = await open_store(url)
    try:
        return await store.migration_states()
    finally:
        await store.close()
