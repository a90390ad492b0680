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
from collections.abc import Callable, Coroutine, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

import uvicorn

from tocsin.api import create_app
from tocsin.api.connections import ConnectionLimits, guarded
from tocsin.api.timekeeper import Timekeeper
from tocsin.auth import SIGNING_KEY_NAME, is_loopback, new_signing_secret
from tocsin.cli.demo import DEMO_OWNER, demo_link
from tocsin.clock import Clock, DatabaseClock
from tocsin.errors import (
    SchemaTooNew,
    SchemaTooOld,
    SecretKeyError,
    SecretUnreadable,
    StoreError,
    StoreUnavailable,
)
from tocsin.heads import HEAD_LIMITS
from tocsin.keyfile import load_keyring
from tocsin.logging import FORMATS, configure_logging
from tocsin.masking import masked
from tocsin.rezone import note_zone_data
from tocsin.settings import Settings, load_settings
from tocsin.store import Store, open_store
from tocsin.store.ports import AppStore

log = logging.getLogger("tocsin.serve")
GC_THRESHOLDS = (20_000, 10, 10)  # see `tune_collector`
GRACEFUL_SHUTDOWN_SECONDS = 10  # open requests may finish; then the services stop


class Service(Protocol):
    """Something that runs beside the API in the same process (the scheduler, delivery)."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


ServiceFactory = Callable[[Store, Settings, Clock], Service]


class StartupError(Exception):
    """A reason not to start, said plainly to the operator."""


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


def add_database_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db",
        metavar="URL-OR-PATH",
        help="database URL, or a path for SQLite (default TOCSIN_DATABASE_URL or ./tocsin.db)",
    )
    parser.add_argument(
        "--migrate",
        action="store_true",
        help="on PostgreSQL, apply missing migrations first (SQLite always migrates)",
    )


def settings_from(args: argparse.Namespace) -> Settings:
    """Settings from the environment, overridden by the flags given (validated together:
    some defaults, such as the part count, depend on the database); `SettingsInvalid`
    names the one that is wrong."""
    update: dict[str, Any] = {}
    if getattr(args, "host", None):
        update["host"] = args.host
    if getattr(args, "port", None):
        update["port"] = args.port
    if getattr(args, "log_format", None):
        update["log_format"] = args.log_format
    if args.db:
        update["database_url"] = args.db if "://" in args.db else f"sqlite:///{args.db}"
    return load_settings(**update)


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


def run_async(main: Coroutine[Any, Any, None]) -> None:
    """Run `main` on uvloop when it is installed, else on asyncio's own loop."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop ships with uvicorn[standard]
        asyncio.run(main)
        return
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(main)


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


_FIRST_PAUSE = 0.5
_MAX_PAUSE = 5.0


async def open_ready_store(
    settings: Settings, *, migrate: bool, make_key: bool = False, wait: bool = False
) -> Store:
    """The store, with its schema current (SQLite migrates itself, PostgreSQL only when
    asked, `migrate`, and otherwise refuses an old schema) and a secret key that opens the
    secrets it keeps. Every process that opens a store this way reads or writes secrets, so
    every one needs the key, even before any app exists: an app or a webhook contact may be
    added at any moment, and its first ring must not be where a missing key shows. With
    `make_key` (`tocsin serve` on loopback) an SQLite database gets a key file when it has
    no key; secrets stored before it are sealed with it at once."""
    url = settings.database_url
    try:
        keyring, made = load_keyring(settings, make=make_key)
    except SecretKeyError as error:
        raise StartupError(str(error)) from error
    # A worker (`wait`) waits for a pooled connection as long as it takes: nobody waits on
    # its answers, and a call given up would only be retried.
    waiting = settings.database_acquire_timeout_seconds
    acquire_timeout = None if wait or not waiting else waiting
    pause = _FIRST_PAUSE
    while True:
        try:
            store = await open_store(url, keyring=keyring, acquire_timeout=acquire_timeout)
            break
        except StoreUnavailable as error:
            if not wait:
                raise StartupError(f"cannot reach the database {masked(url)}: {error}") from error
            # A worker started during a database restart or failover waits for it rather
            # than exit: its parts are waiting too.
            log.warning("cannot reach the database yet (%s); trying again in %.1f s", error, pause)
            await asyncio.sleep(pause)
            pause = min(pause * 2, _MAX_PAUSE)
        except ValueError as error:  # a URL it cannot use, quoted: its credentials masked
            raise StartupError(masked(str(error))) from error
    try:
        await _ready_schema(store, settings, migrate=migrate)
        await _check_secret_key(store, seal_all=made)
        await note_zone_data(store)  # warns when due times may need `tocsin rezone`
    except BaseException:
        await store.close()
        raise
    return store


async def _ready_schema(store: Store, settings: Settings, *, migrate: bool) -> None:
    try:
        if migrate or not settings.is_postgres:
            applied = await store.migrate()
            if applied:
                log.info("migrated the database", extra={"applied": applied})
        else:
            await store.check_schema()
    except SchemaTooOld as error:
        raise StartupError(
            "the database schema is older than this version needs: "
            "run `tocsin migrate` (or start with --migrate)"
        ) from error
    except SchemaTooNew as error:
        raise StartupError(
            f"the database schema is newer than this version of Tocsin: {error}; "
            "run that version (or a newer one), or restore the backup taken before it migrated"
        ) from error
    except StoreUnavailable as error:
        url = masked(settings.database_url)
        raise StartupError(f"cannot reach the database {url}: {error}") from error
    except StoreError as error:
        raise StartupError(
            f"cannot read the database schema ({error}); if it is new, run `tocsin migrate`"
        ) from error


async def _check_secret_key(store: AppStore, *, seal_all: bool) -> None:
    """Fail now, not at the first owner token or ring, when the key cannot open what the
    database keeps: open (making it if new) the owner-token secret. `seal_all`: seal the
    secrets a database kept in plain text before it had a key."""
    try:
        if seal_all:
            done = await store.reseal_secrets()
            if done.resealed:
                log.info("sealed the secrets kept in plain text", extra={"count": done.resealed})
        await store.ensure_secret(SIGNING_KEY_NAME, new_signing_secret())
    except SecretUnreadable as error:
        raise StartupError(
            "the secret key (TOCSIN_SECRET_KEY, else the key file beside an SQLite database) "
            f"does not open the secrets this database keeps: {error}"
        ) from error
    except StoreError as error:
        raise StartupError(f"cannot read the secrets this database keeps: {error}") from error


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
