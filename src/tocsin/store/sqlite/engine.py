"""SQLite connections: one writer thread and a few reader threads, each with its own connection.

Every write is one Python function run whole on the writer thread inside `BEGIN IMMEDIATE …
COMMIT`, so writes are serialised and a conditional update can never interleave with another
coroutine's statements. Reads run on reader threads, each inside its own read transaction (a
consistent WAL snapshot). Driver errors are wrapped here, once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar
from urllib.parse import parse_qs, urlsplit

from tocsin.errors import StoreError, StoreUnavailable, TocsinError

T = TypeVar("T")

_READERS = 2
_BUSY_TIMEOUT_MS = 10_000
# FULL: in WAL mode every commit is fsync'd before it returns, so a reminder that was
# answered 201 survives a power loss or an OS crash too (NORMAL survives only a process
# crash). Batched writes (claims, bulk creates) pay one fsync per batch.
_DEFAULT_SYNCHRONOUS = "full"
_SYNCHRONOUS = ("off", "normal", "full", "extra")
# Page cache per connection (KiB when negative): the default 2 MiB makes claims of a busy
# minute, which touch index pages in random order, read the file over and over.
_CACHE_KIB = 32 * 1024
_UNAVAILABLE = ("database is locked", "unable to open", "disk i/o error", "readonly")


@dataclass(frozen=True, kw_only=True, slots=True)
class SqliteUrl:
    """`sqlite:///relative/path.db` or `sqlite:////absolute/path.db`, `?synchronous=normal`."""

    path: str
    synchronous: str = _DEFAULT_SYNCHRONOUS

    @classmethod
    def parse(cls, url: str) -> SqliteUrl:
        parts = urlsplit(url)
        if parts.scheme != "sqlite" or parts.netloc or not parts.path.startswith("/"):
            raise ValueError(f"not an SQLite URL (sqlite:///path/to/file.db): {url!r}")
        path = parts.path[1:]
        if not path:
            raise ValueError(f"the SQLite URL names no file: {url!r}")
        options = parse_qs(parts.query)
        synchronous = options.get("synchronous", [_DEFAULT_SYNCHRONOUS])[-1].lower()
        if synchronous not in _SYNCHRONOUS:
            raise ValueError(f"synchronous must be one of {', '.join(_SYNCHRONOUS)}")
        return cls(path=path, synchronous=synchronous)


def wrap(error: sqlite3.Error) -> StoreError:
    """The Tocsin error for an SQLite error (the caller raises it `from` the original)."""
    message = str(error).lower()
    if isinstance(error, sqlite3.OperationalError) and any(
        marker in message for marker in _UNAVAILABLE
    ):
        return StoreUnavailable(f"SQLite: {error}")
    return StoreError(f"SQLite: {error}")


class Database:
    """The SQLite file behind a store: `write(fn)` and `read(fn)` run `fn(connection)`."""

    def __init__(self, url: SqliteUrl) -> None:
        self._url = url
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="tocsin-sqlite-write")
        self._readers = ThreadPoolExecutor(_READERS, thread_name_prefix="tocsin-sqlite-read")
        self._closed = False

    async def write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run `work` in one immediate (write-locked) transaction on the writer thread."""
        return await self._run(self._writer, work, "BEGIN IMMEDIATE")

    async def read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run `work` in one read transaction on a reader thread."""
        return await self._run(self._readers, work, "BEGIN")

    async def unlocked(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run `work` on the writer thread outside any transaction (it manages its own)."""
        return await self._run(self._writer, work, None)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        await asyncio.to_thread(self._shutdown)

    def _shutdown(self) -> None:
        self._writer.shutdown(wait=True)
        self._readers.shutdown(wait=True)
        with self._lock:
            for connection in self._connections:
                connection.close()
            self._connections.clear()

    async def _run(
        self, pool: ThreadPoolExecutor, work: Callable[[sqlite3.Connection], T], begin: str | None
    ) -> T:
        if self._closed:
            raise StoreError("the store is closed")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(pool, self._transaction, work, begin)

    def _transaction(self, work: Callable[[sqlite3.Connection], T], begin: str | None) -> T:
        try:
            connection = self._connection()
            if begin is None:
                return work(connection)
            connection.execute(begin)
            try:
                result = work(connection)
            except BaseException:
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")
            return result
        except TocsinError:
            raise
        except sqlite3.Error as error:
            raise wrap(error) from error

    def _connection(self) -> sqlite3.Connection:
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is None:
            connection = open_connection(self._url)
            self._local.connection = connection
            with self._lock:
                self._connections.append(connection)
        return connection


# A new database file is readable by its owner only: it holds every reminder's text and every
# contact's address. SQLite makes the WAL and shared-memory files with the database file's
# permissions, so they follow. A file that exists keeps the permissions its operator gave it.
PRIVATE_FILE_MODE = 0o600


def _create_private(path: str) -> None:
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE))


def open_connection(url: SqliteUrl) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit) with Tocsin's pragmas."""
    with contextlib.suppress(OSError):  # a folder that does not exist: connect says so below
        _create_private(url.path)
    connection = sqlite3.connect(
        url.path,
        isolation_level=None,
        check_same_thread=False,
        timeout=_BUSY_TIMEOUT_MS / 1000,
    )
    try:
        connection.row_factory = sqlite3.Row
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute(f"PRAGMA synchronous = {url.synchronous}")
        connection.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
        connection.execute("PRAGMA foreign_keys = ON")
        connection.execute(f"PRAGMA cache_size = -{_CACHE_KIB}")
    except BaseException:
        connection.close()
        raise
    return connection
