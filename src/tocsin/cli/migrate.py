"""`tocsin migrate`: apply the schema migrations the database lacks."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from tocsin.errors import StoreError
from tocsin.masking import masked
from tocsin.settings import load_settings
from tocsin.store import open_store
from tocsin.store.migrations import migrations_for


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "migrate",
        help="apply the schema migrations the database lacks",
        description="Apply, in order, every schema migration the database lacks. Safe to run "
        "from several processes at once; run it once per release before starting it.",
    )
    parser.add_argument(
        "--db", metavar="URL", help="database URL (default: TOCSIN_DATABASE_URL or ./tocsin.db)"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    settings = load_settings()  # checked even with --db: a bad one must not wait for `serve`
    url: str = args.db or settings.database_url
    try:
        applied = asyncio.run(_migrate(url))
    except (StoreError, ValueError) as error:
        # The message may quote the URL it was given (a keyword string, unsupported).
        print(f"tocsin migrate: {masked(str(error))}", file=sys.stderr)
        return 1
    if applied:
        backend = "postgres" if url.startswith(("postgresql:", "postgres:")) else "sqlite"
        names = {m.version: f"{m.version:04d}_{m.name}" for m in migrations_for(backend)}
        print("applied migrations: " + ", ".join(names[version] for version in applied))
    else:
        print("up to date")
    return 0


async def _migrate(url: str) -> list[int]:
    store = await open_store(url)
    try:
        return await store.migrate()
    finally:
        await store.close()
