"""A PostgreSQL server for the tests: the one running, or a throw-away one we start.

Order of preference: `TOCSIN_TEST_POSTGRES` (a server URL), a server on 127.0.0.1:5432, then
a fresh cluster made with `initdb` from the installed binaries in a temporary folder. When
none is possible the PostgreSQL tests are skipped, loudly, except under CI (`CI=true`), where
they fail instead.
"""

from __future__ import annotations

import asyncio
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass

import asyncpg

DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


@dataclass(frozen=True)
class PostgresServer:
    """A reachable server; `admin_url` points at a database we may create databases from."""

    admin_url: str

    def url_for(self, database: str) -> str:
        base, _, _ = self.admin_url.rpartition("/")
        return f"{base}/{database}"

    def create_database(self, template: str | None = None) -> str:
        """Make a new empty database (or a copy of `template`) and return its URL."""
        name = f"tocsin_test_{uuid.uuid4().hex[:12]}"
        clause = f' TEMPLATE "{template}"' if template else ""
        _run_admin(self.admin_url, f'CREATE DATABASE "{name}"{clause}')
        return self.url_for(name)

    def drop_database(self, url: str) -> None:
        name = url.rpartition("/")[2]
        _run_admin(self.admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def migrated_template(server: PostgresServer) -> Iterator[str]:
    """A database with every migration applied, to copy from; dropped on exit."""
    url = server.create_database()
    name = url.rpartition("/")[2]
    try:
        asyncio.run(_migrate(url))
        yield name
    finally:
        server.drop_database(url)


class Databases:
    """Migrated throw-away databases for tests, made from `template` and recycled.

    A test's database is emptied (every table but `schema_migrations` truncated, stray
    connections ended) on a background thread when the test ends, and handed to the next
    test: much cheaper than CREATE DATABASE each time. Tests that change the schema must use
    an empty database (`pg_url`) instead. Every database made is dropped on `close`.
    """

    def __init__(self, server: PostgresServer, template: str) -> None:
        self._server = server
        self._template = template
        self._made: list[str] = []
        self._recycling: deque[Future[str | None]] = deque()
        self._janitor = ThreadPoolExecutor(1, thread_name_prefix="pg-recycle")

    def take(self) -> str:
        """The URL of an empty, migrated database."""
        while self._recycling:
            recycled = self._recycling.popleft().result()
            if recycled is not None:
                return recycled
        url = self._server.create_database(template=self._template)
        self._made.append(url)
        return url

    def give_back(self, url: str) -> None:
        self._recycling.append(self._janitor.submit(self._empty, url))

    def close(self) -> None:
        self._janitor.shutdown(wait=True)
        for url in self._made:
            self._server.drop_database(url)

    @staticmethod
    def _empty(url: str) -> str | None:
        try:
            _run_admin(url, _EMPTY_DATABASE)
        except (OSError, asyncpg.PostgresError):
            return None
        return url


_EMPTY_DATABASE = """
DO $$
BEGIN
    PERFORM pg_terminate_backend(pid) FROM pg_stat_activity
    WHERE datname = current_database() AND pid <> pg_backend_pid();
    -- The months of `due` retention made (store/postgres/months.py): a migrated database has
    -- none.
    EXECUTE coalesce((
        SELECT 'DROP TABLE ' || string_agg(format('%I', tablename), ', ')
        FROM pg_tables WHERE schemaname = 'public' AND tablename ~ '^due_[0-9]{4}_[0-9]{2}$'
    ), 'SELECT 1');
    EXECUTE (
        SELECT 'TRUNCATE ' || string_agg(format('%I', tablename), ', ') || ' CASCADE'
        FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'schema_migrations'
    );
END
$$
"""


async def _migrate(url: str) -> None:
    from tocsin.store import open_store

    store = await open_store(url)
    try:
        await store.migrate()
    finally:
        await store.close()


async def execute(url: str, sql: str) -> None:
    """Run `sql` on a connection of its own (an operator's session beside the one tested)."""
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


def _run_admin(url: str, sql: str) -> None:
    asyncio.run(execute(url, sql))


def _reachable(url: str) -> bool:
    async def probe() -> None:
        conn = await asyncpg.connect(url, timeout=3)
        await conn.close()

    try:
        asyncio.run(probe())
    except (OSError, asyncpg.PostgresError, TimeoutError):
        return False
    return True


def _find_initdb() -> str | None:
    found = shutil.which("initdb")
    if found:
        return found
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return candidates[-1] if candidates else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class OwnServer:
    """A PostgreSQL cluster of our own in a temporary folder, which a test may stop and start
    again (the shared one it must never touch)."""

    def __init__(self, initdb: str) -> None:
        self._bindir = os.path.dirname(initdb)
        self.folder = tempfile.mkdtemp(prefix="tocsin-pg-")
        self._data = os.path.join(self.folder, "data")
        self.port = _free_port()
        self._run_as: list[str] = []
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root
            os.chown(self.folder, *_nobody())
            self._run_as = ["runuser", "-u", "nobody", "--"]
        self._run(initdb, "-D", self._data, "-U", "postgres", "--auth=trust", "-E", "UTF8")

    @property
    def server(self) -> PostgresServer:
        return PostgresServer(admin_url=f"postgresql://postgres@127.0.0.1:{self.port}/postgres")

    def start(self) -> None:
        log = os.path.join(self.folder, "log")
        options = f"-p {self.port} -k {self.folder} -c fsync=off"
        self._run(self._pg_ctl, "-D", self._data, "-w", "-l", log, "-o", options, "start")

    def stop(self) -> None:
        """Stop it as a crash does: at once, without a checkpoint."""
        self._run(self._pg_ctl, "-D", self._data, "-m", "immediate", "stop", check=False)

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)

    @property
    def _pg_ctl(self) -> str:
        return os.path.join(self._bindir, "pg_ctl")

    def _run(self, *command: str, check: bool = True) -> None:
        subprocess.run([*self._run_as, *command], check=check, capture_output=True)


@contextmanager
def own_server() -> Iterator[OwnServer | str]:
    """A started `OwnServer`, removed at the end; or a string saying why none can be made."""
    initdb = _find_initdb()
    if initdb is None:
        yield "no initdb installed to start a PostgreSQL of our own"
        return
    own = OwnServer(initdb)
    try:
        own.start()
        yield own
    finally:
        own.remove()


@contextmanager
def _throwaway_server(initdb: str) -> Iterator[PostgresServer]:
    own = OwnServer(initdb)
    try:
        own.start()
        yield own.server
    finally:
        own.remove()


def _nobody() -> tuple[int, int]:
    import pwd

    entry = pwd.getpwnam("nobody")
    return entry.pw_uid, entry.pw_gid


@contextmanager
def postgres_server() -> Iterator[PostgresServer | str]:
    """Yield a server, or a string saying why none is available."""
    url = os.environ.get("TOCSIN_TEST_POSTGRES", DEFAULT_URL)
    if _reachable(url):
        yield PostgresServer(admin_url=url)
        return
    initdb = _find_initdb()
    if initdb is None:
        yield f"no PostgreSQL at {url} and no initdb installed to start one"
        return
    with _throwaway_server(initdb) as server:
        deadline = time.monotonic() + 30
        while not _reachable(server.admin_url):
            if time.monotonic() > deadline:
                raise RuntimeError("the throw-away PostgreSQL did not start")
            time.sleep(0.2)
        yield server
