"""`tocsin serve`: the API, and the services that run beside it, in one process.

`run_services` is where the scheduler joins the API: it takes the extra services (anything
with `async start()` and `async stop()`, here the scheduler's `Engine`), starts them before
the API listens and stops them after it has drained. The store is opened in the same event
loop and shared by all, so a reminder saved through the API wakes the scheduler in-process.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import signal
import socket
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

import uvicorn

from tocsin.api import create_app
from tocsin.api.connections import ConnectionLimits, guarded
from tocsin.api.timekeeper import Timekeeper
from tocsin.auth import is_loopback
from tocsin.cli.demo import DEMO_OWNER, demo_link
from tocsin.cli.startup import (
    StartupError,
    add_database_arguments,
    open_ready_store,
    run_async,
    settings_from,
)
from tocsin.clock import Clock, DatabaseClock
from tocsin.heads import HEAD_LIMITS
from tocsin.logging import FORMATS, configure_logging
from tocsin.settings import Settings
from tocsin.store import Store
from tocsin.store.ports import AppStore

log = logging.getLogger("tocsin.serve")
GC_THRESHOLDS = (20_000, 10, 10)  # see `tune_collector`
GRACEFUL_SHUTDOWN_SECONDS = 10  # open requests may finish; then the services stop


class Service(Protocol):
    """Something that runs beside the API in the same process (the scheduler, delivery)."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


ServiceFactory = Callable[[Store, Settings, Clock], Service]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="run the API (and the scheduler) in one process",
        description="Run the HTTP API, with the scheduler and delivery, in one process. "
        "On SQLite the database file is created and migrated on start.",
    )
    add_server_arguments(parser)
    parser.add_argument(
        "--null-channels",
        action="store_true",
        help="send nothing: every channel only counts (for benchmarks of the engine)",
    )
    parser.set_defaults(handler=run_serve)


def add_server_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port to listen on (default 8000)")
    add_database_arguments(parser)
    parser.add_argument(
        "--log-format", choices=FORMATS, help="log line format (default TOCSIN_LOG_FORMAT or kv)"
    )


def run_serve(args: argparse.Namespace) -> int:
    from tocsin.scheduler import make_engine  # the scheduler and delivery, beside the API

    # The one command that may make the key file: `make run` must need nothing.
    return serve(
        args, [null_engine if args.null_channels else make_engine], make_key=True, demo=True
    )


def null_engine(store: Store, settings: Settings, clock: Clock) -> Service:
    """The scheduler and delivery with channels that send nothing and only count."""
    from tocsin.channels import build_channels
    from tocsin.scheduler import Engine, new_worker_id

    channels = build_channels(settings, clock, null=True)
    return Engine(store, settings, clock, worker_id=new_worker_id(), channels=channels)


def serve(
    args: argparse.Namespace,
    services: Sequence[ServiceFactory],
    *,
    make_key: bool = False,
    demo: bool = False,
) -> int:
    """Run the API (with `services`) until SIGINT or SIGTERM; the exit status. With
    `make_key`, a server on loopback and SQLite with no secret key makes its key file; with
    `demo`, one in loopback dev mode prints a link to the page signed in as a demo owner."""
    settings = settings_from(args)
    configure_logging(settings.log_level, settings.log_format)
    make_key = make_key and is_loopback(settings.host)
    try:
        run_async(serve_api(settings, services, migrate=args.migrate, make_key=make_key, demo=demo))
    except StartupError as error:
        log.error("not starting: %s", error)
        print(f"tocsin: {error}", file=sys.stderr)
        return 1
    return 0


def tune_collector() -> None:
    """Set the cyclic garbage collector for a process that holds many open connections.

    Each open feed connection is ~150 objects the collector tracks (uvicorn's protocol
    objects, the ASGI stack's suspended coroutines, the feed's own), so 10,000 pages are
    1.5 million. With CPython's default first threshold (700 allocations), a burst of rings
    keeps promoting its short-lived objects to the oldest generation until a full
    collection walks all of them: measured, a 0.9 s pause in the middle of a 10,000-ring
    burst (docs/benchmarks.md, the in-app row). A first threshold of GC_THRESHOLDS[0] lets
    them die young instead."""
    gc.set_threshold(*GC_THRESHOLDS)


async def serve_api(
    settings: Settings,
    factories: Sequence[ServiceFactory],
    *,
    migrate: bool,
    sockets: Sequence[socket.socket] = (),
    check_keys: bool = True,
    make_key: bool = False,
    demo: bool = False,
) -> None:
    """Open the store and serve until stopped; on `sockets` (already bound) when given."""
    store = await open_ready_store(settings, migrate=migrate, make_key=make_key)
    try:
        if check_keys:
            await check_auth(store, settings.host)
        link = await demo_link(store, settings) if demo else None
        if link is not None:
            print(f"Try the reminders page, signed in as {DEMO_OWNER!r}: {link}", flush=True)
        clock = DatabaseClock()  # the API decides by the database's clock, as workers do
        keeper = Timekeeper(store, clock)
        app = create_app(store=store, settings=settings, clock=clock)
        config = uvicorn.Config(
            app,
            host=settings.host,
            port=settings.port,
            log_config=None,
            access_log=False,
            lifespan="off",
            server_header=False,
            timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
            http=guarded(ConnectionLimits.of(settings)),
            # Where h11 is the parser (no httptools), its own cap (16 KiB) would refuse a head
            # that the guard's limit allows, with a 400.
            h11_max_incomplete_event_size=HEAD_LIMITS.head_bytes,
            # No route is a WebSocket, and an upgraded connection would leave the guard.
            ws="none",
            # Forwarding headers are read by `tocsin.api.proxies`, from trusted proxies only.
            proxy_headers=False,
        )
        services = [keeper, *(make(store, settings, clock) for make in factories)]
        # Feed connections never end by themselves: ended at the stop signal, their pages
        # reconnect (to another process) and the server drains in time.
        feed = app.state.tocsin.feed
        tune_collector()
        await run_services(_Server(config, sockets), services, on_stop=feed.close)
    finally:
        await store.close()


async def check_auth(store: AppStore, host: str) -> None:
    """Refuse to listen beyond loopback without API keys; say so when running open."""
    if await store.count_apps() > 0:
        return
    if not is_loopback(host):
        raise StartupError(
            f"refusing to listen on {host} without API keys: create one with "
            "`tocsin keys create --app NAME`, or listen on 127.0.0.1"
        )
    log.warning(
        "no API keys exist: accepting requests without a key on loopback only; "
        "create one with `tocsin keys create --app NAME`",
        extra={"host": host},
    )


async def run_services(
    server: uvicorn.Server,
    services: Sequence[Service],
    *,
    on_stop: Callable[[], None] | None = None,
) -> None:
    """Start `services`, serve until told to stop (SIGINT/SIGTERM; `on_stop` is called
    then), then stop the services in reverse order — each one that started, even when
    another failed."""
    started: list[Service] = []
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, _stopper(server, on_stop))
    try:
        for service in services:
            await service.start()
            started.append(service)
        await server.serve()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        for service in reversed(started):
            await service.stop()


def _stopper(server: uvicorn.Server, on_stop: Callable[[], None] | None) -> Callable[[], None]:
    def stop() -> None:
        if on_stop is not None:
            on_stop()
        if server.should_exit:
            server.force_exit = True  # a second signal: stop waiting for open requests
        server.should_exit = True

    return stop


class _Server(uvicorn.Server):
    """uvicorn, leaving signals to `run_services` (uvicorn's own handling re-raises the
    signal after shutdown, which would kill the process before the services stop), and
    serving on sockets bound before (several processes sharing one port) when given."""

    def __init__(self, config: uvicorn.Config, sockets: Sequence[socket.socket] = ()) -> None:
        super().__init__(config)
        self._sockets = list(sockets)

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        await super().serve(sockets or self._sockets or None)

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield
