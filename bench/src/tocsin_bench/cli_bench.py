"""`tocsin bench …`: the benchmarks of docs/benchmarks.md — burst, steady, api, limit,
storage, retention, status, plans, arrivals, migration, upgrade, and all of them (`all`); a
table on stdout, or `--json`."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from tocsin.store.migrations import BATCH_PAGES
from tocsin_bench.report import to_json, to_table

Scenario = Callable[[argparse.Namespace], Awaitable[dict[str, Any]]]


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "bench",
        help="measure Tocsin on this machine (see docs/benchmarks.md)",
        description="Benchmarks on throw-away databases with real worker processes.",
    )
    kinds = parser.add_subparsers(dest="bench", metavar="BENCHMARK", required=True)
    _burst(kinds)
    _steady(kinds)
    _api(kinds)
    _limit(kinds)
    _layout(kinds)
    _storage(kinds)
    _retention(kinds)
    _status(kinds)
    _plans(kinds)
    _arrivals(kinds)
    _migration(kinds)
    _upgrade(kinds)
    _all(kinds)


def _common(parser: argparse.ArgumentParser, *, db: bool = True) -> None:
    if db:
        parser.add_argument("--db", choices=("sqlite", "postgres"), default="postgres")
    parser.add_argument(
        "--pg-url",
        help="PostgreSQL server to make throw-away databases on (default "
        "TOCSIN_DATABASE_URL, else postgresql://postgres@127.0.0.1:5432/postgres)",
    )
    parser.add_argument("--runs", type=int, default=1, help="repeat, and report medians")
    parser.add_argument("--json", action="store_true", help="JSON on stdout instead of a table")


def _firing_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--workers", type=int, default=2, help="worker processes (SQLite: one tocsin serve)"
    )
    parser.add_argument(
        "--channel",
        choices=("null", "webhook", "apns", "email", "inapp"),
        default="null",
        help="where rings go: nowhere (null); a local peer process: the webhook "
        "receiver, an HTTP/2 APNs, an SMTP server; or "
        "(inapp) pages connected to a `tocsin api`'s feed, one per owner",
    )
    parser.add_argument(
        "--owners",
        type=int,
        help="apns, email, inapp: the reminders go to this many owners in turn, each with "
        "one contact or one open feed connection (default 2,000; inapp 10,000)",
    )
    parser.add_argument(
        "--api-workers",
        type=int,
        default=1,
        metavar="N",
        help="inapp on PostgreSQL: the pages' `tocsin api` runs N processes (--workers N)",
    )
    parser.add_argument(
        "--due-in",
        type=float,
        metavar="SECONDS",
        help="first due this soon after the save instead of at the next free minute start "
        "(quick smoke runs; lateness then includes the sweep interval)",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a setting for the workers (TOCSIN_NAME), e.g. --set sweep_seconds=30",
    )
    parser.add_argument(
        "--pg-set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="PostgreSQL: a setting for every session of the throw-away database (ALTER "
        "DATABASE ... SET), e.g. --pg-set wal_compression=lz4",
    )


def _burst(kinds: Any) -> None:
    parser = kinds.add_parser("burst", help="N reminders due within S seconds of a minute")
    _common(parser)
    _firing_options(parser)
    parser.add_argument("--reminders", type=int, default=100_000)
    parser.add_argument("--spread", type=int, default=1, help="seconds the due times cover")
    parser.add_argument(
        "--among",
        type=int,
        default=0,
        metavar="N",
        help="save N reminders due in 2-30 days interleaved with the due ones, so that "
        "those lie scattered over the table as in one of long standing",
    )
    parser.add_argument(
        "--history",
        type=int,
        default=0,
        metavar="K",
        help="PostgreSQL: each series saved has rung K times before, a week apart (sent "
        "firings), as in a table of long standing",
    )
    parser.set_defaults(handler=_handler(_run_burst))


def _steady(kinds: Any) -> None:
    parser = kinds.add_parser("steady", help="reminders due at a constant rate")
    _common(parser)
    _firing_options(parser)
    parser.add_argument("--rate", type=int, default=2_300, help="reminders due per second")
    parser.add_argument("--duration", type=int, default=60, help="seconds")
    parser.set_defaults(handler=_handler(_run_steady), channel="webhook")


def _api(kinds: Any) -> None:
    parser = kinds.add_parser("api", help="creates per second and latency of the HTTP API")
    _common(parser)
    parser.add_argument("--rate", type=int, default=500, help="offered load for the latency")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per phase")
    parser.add_argument("--connections", type=int, default=16, help="closed-loop connections")
    _api_workers(parser)
    parser.set_defaults(handler=_handler(_run_api))


def _api_workers(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--api-workers",
        type=int,
        default=1,
        metavar="N",
        help="run `tocsin api --workers N` (PostgreSQL; default 1 process)",
    )


def _limit(kinds: Any) -> None:
    parser = kinds.add_parser("limit", help="bare claim transactions: the database's limit")
    _common(parser, db=False)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--connections", type=int, default=2)
    parser.set_defaults(handler=_handler(_run_limit))


def _layout(kinds: Any) -> None:
    parser = kinds.add_parser(
        "layout", help="a ring's writes in place or in due order, on a table of long standing"
    )
    _common(parser, db=False)
    parser.add_argument("--rows", type=int, default=20_000, help="rings of each pass")
    parser.add_argument("--among", type=int, default=10, help="each pass's rows lie 1 in this many")
    parser.set_defaults(handler=_handler(_run_layout))


def _storage(kinds: Any) -> None:
    parser = kinds.add_parser("storage", help="bytes per reminder on PostgreSQL")
    _common(parser, db=False)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.set_defaults(handler=_handler(_run_storage))


def _retention(kinds: Any) -> None:
    parser = kinds.add_parser(
        "retention",
        help="old rows deleted per second beside a steady ring load, and its ring p99",
        description="PostgreSQL: a steady run, then the same with a backlog of old firings "
        "(and their attempts) for the workers' retention to delete while it runs.",
    )
    _common(parser, db=False)
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument("--channel", choices=("null", "webhook"), default="webhook")
    parser.add_argument("--old-firings", type=int, default=1_000_000, help="the backlog")
    parser.add_argument("--rate", type=int, default=500, help="rings due per second")
    parser.add_argument("--duration", type=int, default=120, help="seconds of rings")
    parser.add_argument(
        "--churn",
        action="store_true",
        help="instead of a backlog: old rings coming of age as fast as the rings arrive (with "
        "TOCSIN_RETAIN_FIRINGS=1d), and the tables' sizes, dead rows and vacuums before, "
        "every minute and after (the bloat of a steady run; --old-firings is not used)",
    )
    parser.set_defaults(handler=_handler(_run_retention))


def _status(kinds: Any) -> None:
    parser = kinds.add_parser("status", help="the status board's read on a large database")
    _common(parser)
    parser.add_argument("--reminders", type=int, default=1_000_000)
    parser.add_argument("--firings", type=int, default=500_000)
    parser.add_argument("--busy", type=int, default=100_000, help="in one minute each way")
    parser.set_defaults(handler=_handler(_run_status))


def _plans(kinds: Any) -> None:
    parser = kinds.add_parser(
        "plans",
        help="the scheduler's writes on PostgreSQL: plans and ms a batch, stale statistics "
        "and analysed",
    )
    _common(parser, db=False)
    parser.add_argument("--reminders", type=int, default=1_000_000)
    parser.add_argument("--busy", type=int, default=200_000, help="pending in one minute")
    parser.add_argument("--firings", type=int, default=1_000_000)
    parser.add_argument("--sending", type=int, default=200_000, help="firings being sent")
    parser.set_defaults(handler=_handler(_run_plans))


def _arrivals(kinds: Any) -> None:
    parser = kinds.add_parser(
        "arrivals",
        help="everyone home at once: crossings reported a second, crossing to sent, cost a ring",
    )
    _common(parser)
    parser.add_argument("--crossings", type=int, default=10_000, help="owners, one arrival each")
    parser.add_argument("--rate", type=int, default=10_000, help="crossings offered a second")
    parser.add_argument("--workers", type=int, default=2, help="worker processes (PostgreSQL)")
    _api_workers(parser)
    parser.set_defaults(handler=_handler(_run_arrivals))


def _migration(kinds: Any) -> None:
    parser = kinds.add_parser(
        "migration",
        help="migrations 0034 and 0036 under a steady load of firing writes: how long, the "
        "WAL, and how long a write waited",
    )
    _common(parser, db=False)
    parser.add_argument("--firings", type=int, default=2_000_000, help="the history to key")
    parser.add_argument("--rate", type=int, default=200, help="firing writes a second")
    parser.add_argument("--batch-pages", type=int, default=BATCH_PAGES, help="pages a batch")
    parser.set_defaults(handler=_handler(_run_migration))


def _upgrade(kinds: Any) -> None:
    parser = kinds.add_parser(
        "upgrade",
        help="a database of the release before 0021 upgraded while it writes (0021 to 0035): "
        "how long, the WAL, and how long a write waited",
    )
    _common(parser, db=False)
    parser.add_argument("--reminders", type=int, default=1_000_000, help="pending series")
    parser.add_argument("--history", type=int, default=2, help="sent firings of each")
    parser.add_argument("--rate", type=int, default=200, help="the release before's writes/s")
    parser.add_argument("--batch-pages", type=int, default=BATCH_PAGES, help="pages a batch")
    parser.set_defaults(handler=_handler(_run_upgrade))


def _all(kinds: Any) -> None:
    parser = kinds.add_parser("all", help="the whole set of docs/benchmarks.md")
    _common(parser, db=False)
    parser.add_argument(
        "--quick", action="store_true", help="small sizes: a check that it all runs"
    )
    parser.set_defaults(handler=_run_all)


def _handler(scenario: Scenario) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        from tocsin_bench.suite import repeated

        result = asyncio.run(repeated(lambda: scenario(args), args.runs))
        _print([result], as_json=args.json)
        return 0

    return run


def _print(results: list[dict[str, Any]], *, as_json: bool) -> None:
    sys.stdout.write((to_json(results) if as_json else to_table(results)) + "\n")


async def _run_burst(args: argparse.Namespace) -> dict[str, Any]:
    from tocsin_bench.firing import FiringSpec, run_firing

    spec = FiringSpec(
        scenario="burst",
        reminders=args.reminders,
        spread=args.spread,
        among=args.among,
        history=args.history,
        **_firing_fields(args),
    )
    return await run_firing(spec)


async def _run_steady(args: argparse.Namespace) -> dict[str, Any]:
    from tocsin_bench.firing import FiringSpec, run_firing

    spec = FiringSpec(
        scenario="steady",
        reminders=args.rate * args.duration,
        spread=args.duration,
        rate=args.rate,
        **_firing_fields(args),
    )
    return await run_firing(spec)


async def _run_arrivals(args: argparse.Namespace) -> dict[str, Any]:
    from tocsin_bench.arrivals import ArrivalsSpec, run_arrivals

    spec = ArrivalsSpec(
        db=args.db,
        owners=args.crossings,
        rate=args.rate,
        workers=args.workers,
        api_workers=args.api_workers,
        pg_url=args.pg_url,
    )
    return await run_arrivals(spec)


def _firing_fields(args: argparse.Namespace) -> dict[str, Any]:
    """The FiringSpec fields of the options `burst` and `steady` share (`_firing_options`)."""
    return {
        "db": args.db,
        "workers": 1 if args.db == "sqlite" else args.workers,
        "channel": args.channel,
        "pg_url": args.pg_url,
        "due_in": args.due_in,
        "owners": args.owners,
        "api_workers": args.api_workers,
        "worker_settings": _settings(args.set),
        "database_settings": _settings(args.pg_set, flag="--pg-set"),
    }


def _settings(pairs: list[str], *, flag: str = "--set") -> tuple[tuple[str, str], ...]:
    settings = []
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise SystemExit(f"tocsin bench: {flag} takes NAME=VALUE, not {pair!r}")
        settings.append((name.strip().lower(), value.strip()))
    return tuple(settings)


async def _run_api(args: argparse.Namespace) -> dict[str, Any]:
    from tocsin_bench.api import ApiSpec, run_api

    spec = ApiSpec(
        db=args.db,
        rate=args.rate,
        duration=args.duration,
        connections=args.connections,
        api_workers=args.api_workers,
        pg_url=args.pg_url,
    )
    return await run_api(spec)


async def _run_limit(args: argparse.Namespace) -> dict[str, Any]:
    from tocsin_bench.limit import LimitSpec, run_limit

    return await run_limit(
        LimitSpec(rows=args.rows, connections=args.connections, pg_url=args.pg_url)
    )


async def _run_layout(args: argparse.Namespace) -> dict[str, Any]:
    from tocsin_bench.layout import LayoutSpec, run_layout

    return await run_layout(LayoutSpec(rows=args.rows, among=args.among, pg_url=args.pg_url))


async def _run_storage(args: argparse.Namespace) -> dict[str, Any]:
    from tocsin_bench.storage import StorageSpec, run_storage

    return await run_storage(StorageSpec(rows=args.rows, pg_url=args.pg_url))


async def _run_retention(args: argparse.Namespace) -> dict[str, Any]:
    from tocsin_bench.retention import ChurnSpec, RetentionSpec, run_churn, run_retention

    load = {
        "rate": args.rate,
        "duration": args.duration,
        "workers": args.workers,
        "channel": args.channel,
        "pg_url": args.pg_url,
    }
    if args.churn:
        return await run_churn(ChurnSpec(**load))
    return await run_retention(RetentionSpec(old_firings=args.old_firings, **load))


async def _run_status(args: argparse.Namespace) -> dict[str, Any]:
    from tocsin_bench.status import StatusSpec, run_status

    spec = StatusSpec(
        db=args.db,
        reminders=args.reminders,
        firings=args.firings,
        busy=args.busy,
        pg_url=args.pg_url,
    )
    return await run_status(spec)


async def _run_plans(args: argparse.Namespace) -> dict[str, Any]:
    from tocsin_bench.plans import PlansSpec, run_plans

    spec = PlansSpec(
        reminders=args.reminders,
        busy=args.busy,
        firings=args.firings,
        sending=args.sending,
        pg_url=args.pg_url,
    )
    return await run_plans(spec)


async def _run_migration(args: argparse.Namespace) -> dict[str, Any]:
    from tocsin_bench.migration import MigrationSpec, run_migration

    spec = MigrationSpec(
        firings=args.firings, rate=args.rate, batch_pages=args.batch_pages, pg_url=args.pg_url
    )
    return await run_migration(spec)


async def _run_upgrade(args: argparse.Namespace) -> dict[str, Any]:
    from tocsin_bench.upgrade import UpgradeSpec, run_upgrade

    spec = UpgradeSpec(
        reminders=args.reminders,
        history=args.history,
        rate=args.rate,
        batch_pages=args.batch_pages,
        pg_url=args.pg_url,
    )
    return await run_upgrade(spec)


def _run_all(args: argparse.Namespace) -> int:
    from tocsin_bench.suite import run_all

    results = asyncio.run(run_all(runs=args.runs, pg_url=args.pg_url, quick=args.quick))
    _print(results, as_json=args.json)
    return 0
