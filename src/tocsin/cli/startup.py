"""What the commands that open the database share: its flags, the settings they override,
and the store opened ready to use (schema current, secret key checked). No server here:
`tocsin keys`, `rezone` and `worker` start without importing the API or uvicorn."""

from __future__ import annotations

import argparse
import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

from tocsin.auth import SIGNING_KEY_NAME, new_signing_secret
from tocsin.errors import (
    SchemaTooNew,
    SchemaTooOld,
    SecretKeyError,
    SecretUnreadable,
    StoreError,
    StoreUnavailable,
)
from tocsin.keyfile import load_keyring
from tocsin.masking import masked
from tocsin.rezone import note_zone_data
from tocsin.settings import Settings, load_settings
from tocsin.store import Store, open_store
from tocsin.store.ports import AppStore

log = logging.getLogger("tocsin.serve")  # the name these lines had when they were serve's


class StartupError(Exception):
    """A reason not to start, said plainly to the operator."""


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


def run_async(main: Coroutine[Any, Any, None]) -> None:
    """Run `main` on uvloop when it is installed, else on asyncio's own loop."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop ships with uvicorn[standard]
        asyncio.run(main)
        return
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(main)


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
