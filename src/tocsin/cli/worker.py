"""`tocsin worker`: the scheduler and delivery, without the API — run any number of them on
PostgreSQL; they share the parts among themselves."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from typing import Any

from tocsin.actions import action_links
from tocsin.channels import build_channels
from tocsin.cli.startup import StartupError, open_ready_store, run_async
from tocsin.clock import DatabaseClock
from tocsin.logging import FORMATS, configure_logging
from tocsin.metrics.port import MetricsPort
from tocsin.scheduler import Engine, new_worker_id
from tocsin.settings import Settings, load_settings
from tocsin.store import Store

log = logging.getLogger("tocsin.worker")


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "worker",
        help="run the scheduler and delivery (no API)",
        description="Ring reminders: hold a fair share of the scheduler parts, fire their "
        "reminders by the second and deliver them. SIGTERM or SIGINT stops it gracefully: "
        "it stops claiming, finishes what it was sending and gives its parts up.",
    )
    parser.add_argument(
        "--db", metavar="URL", help="database URL (default TOCSIN_DATABASE_URL or ./tocsin.db)"
    )
    parser.add_argument(
        "--migrate",
        action="store_true",
        help="on PostgreSQL, apply missing migrations first (else an old schema is refused)",
    )
    parser.add_argument("--parts", type=int, help="scheduler parts (default TOCSIN_PARTS)")
    parser.add_argument(
        "--lease-seconds", type=float, help="part lease time (default TOCSIN_LEASE_SECONDS)"
    )
    parser.add_argument("--worker-id", help="this worker's name (default host:pid:random)")
    parser.add_argument(
        "--null-channels",
        action="store_true",
        help="send nothing: every channel only counts (for benchmarks of the engine)",
    )
    parser.add_argument(
        "--log-format", choices=FORMATS, help="log line format (default TOCSIN_LOG_FORMAT or kv)"
    )
    parser.add_argument(
        "--metrics-port",
        type=int,
        metavar="PORT",
        help="serve /metrics, /healthz and /readyz on this port (default: none)",
    )
    parser.add_argument(
        "--metrics-host",
        default="127.0.0.1",
        metavar="HOST",
        help="address of the metrics port (default 127.0.0.1; 0.0.0.0 for every interface)",
    )
    parser.set_defaults(handler=run)


def settings_from(args: argparse.Namespace) -> Settings:
    """Settings from the environment, overridden by the flags given (`SettingsInvalid`
    names the one that is wrong)."""
    update: dict[str, Any] = {}
    if args.db:
        update["database_url"] = args.db if "://" in args.db else f"sqlite:///{args.db}"
    if args.parts is not None:
        update["parts"] = args.parts
    if args.lease_seconds is not None:
        update["lease_seconds"] = args.lease_seconds
    if args.log_format:
        update["log_format"] = args.log_format
    return load_settings(**update)


def run(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    configure_logging(settings.log_level, settings.log_format)
    try:
        run_async(_work(settings, args))
    except StartupError as error:
        log.error("not starting: %s", error)
        print(f"tocsin worker: {error}", file=sys.stderr)
        return 1
    return 0


async def _work(settings: Settings, args: argparse.Namespace) -> None:
    store = await open_ready_store(settings, migrate=args.migrate, wait=True)
    port: MetricsPort | None = None
    try:
        clock = DatabaseClock()  # rings by the database's clock, which judges the leases
        channels = build_channels(
            settings,
            clock,
            null=args.null_channels,
            announce=store.announce_feed,
            links=action_links(settings.links_base_url, store.keyring),
        )
        worker_id = args.worker_id or new_worker_id()
        engine = Engine(store, settings, clock, worker_id=worker_id, channels=channels)
        if args.metrics_port is not None:
            port = await _open_port(store, engine, args)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await engine.start()
        log.info("worker running", extra={"worker": worker_id, "parts": settings.parts})
        await stop.wait()
        log.info("stopping: finishing what is in flight", extra={"worker": worker_id})
        await engine.stop()
    finally:
        if port is not None:
            await port.stop()
        await store.close()


async def _open_port(store: Store, engine: Engine, args: argparse.Namespace) -> MetricsPort:
    port = MetricsPort(
        store, host=args.metrics_host, port=args.metrics_port, problem=engine.holding_problem
    )
    try:
        await port.start()
    except OSError as error:
        raise StartupError(
            f"cannot listen on the metrics port {args.metrics_host}:{args.metrics_port}: {error}"
        ) from error
    return port
