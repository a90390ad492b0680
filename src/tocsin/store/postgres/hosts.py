"""Connecting through a multi-host URL one host at a time, so that a failure names each host
and what it answered, and the host that last took writes is tried first.

asyncpg tries a URL's hosts in turn too, but raises the last host's network error alone:
during a failover, with the old primary dead and the promoted standby still read-only
(pg_auto_failover keeps `default_transaction_read_only` on until the demote timeout ends),
every process logged "Connection refused" and never that the live host was read-only. It
also shares one timeout among the hosts, so a first host that does not answer (a machine
gone) leaves none for the next, and it starts from the first host every time, so after a
failover each new connection waits on the dead host before reaching the new primary.

Only the URL forms Tocsin documents are taken apart here (`postgresql://user@h1:p1,h2:p2/db`
with `target_session_attrs` absent, `any` or `read-write`); any other (a socket
directory, `host=` in the query, a standby preference) goes to asyncpg as it is.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import asyncpg

from tocsin.errors import DatabaseDown, DatabaseReadOnly, StoreError, StoreUnavailable
from tocsin.store.postgres import queries as q
from tocsin.store.postgres.failures import DRIVER_ERRORS, translate

# What each `target_session_attrs` asks of a host, as one query that is true when the host
# will not do; None: any host that answers will do.
_REFUSES = {"any": None, "read-write": q.READ_ONLY}
_READ_ONLY = "read-only (a standby, or default_transaction_read_only is on)"
_HOST = "\x00host\x00"  # where each host goes in the URL (no URL holds a NUL)
STILL_DOWN_EVERY = 30.0  # seconds between the lines saying the database is still away

log = logging.getLogger(__name__)


class Hosts:
    """`connect()` for one URL: each host tried in turn, the last usable one first."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._parsed = _split(url)
        self._preferred: str | None = None
        self.outage = Outage()

    @property
    def names(self) -> list[str]:
        """The `host:port` of each host the URL names, in its order (empty when the URL is
        not one taken apart here)."""
        return [] if self._parsed is None else list(self._parsed[1])

    async def connect(self, dsn: str | None = None, **options: Any) -> asyncpg.Connection:
        """A connection to the first host that will do, trying the one that did last time
        first; `options` as `asyncpg.connect` takes them (a pool passes its own). Raises a
        `StoreError` naming every host tried and what each answered: `DatabaseReadOnly` when
        one answered but takes no writes and none would do, `StoreUnavailable` when none
        could be reached."""
        del dsn  # the pool hands back the URL it was made with: ours
        try:
            connection = await self._connect(options)
        except StoreUnavailable as error:
            self.outage.failed(error)
            raise
        self.outage.ended()
        return connection

    async def _connect(self, options: dict[str, Any]) -> asyncpg.Connection:
        if self._parsed is None:
            try:
                return await asyncpg.connect(self._url, **options)
            except DRIVER_ERRORS as error:
                failed = translate(error)
                if type(failed) is StoreUnavailable:
                    raise DatabaseDown(str(failed)) from error
                raise failed from error
        template, hosts, refuses = self._parsed
        order = sorted(hosts, key=lambda host: host != self._preferred)
        failures: list[tuple[str, BaseException | None]] = []
        for host in order:
            try:
                connection = await asyncpg.connect(template.replace(_HOST, hosts[host]), **options)
            except DRIVER_ERRORS as error:
                failures.append((host, error))
                continue
            try:
                unusable = refuses is not None and await connection.fetchval(refuses)
            except BaseException:
                connection.terminate()
                raise
            if not unusable:
                if host != self._preferred and self._preferred is not None:
                    log.warning("connected to %s, which takes writes now", host)
                self._preferred = host
                return connection
            connection.terminate()
            failures.append((host, None))
        raise _failed(failures)


def _split(url: str) -> tuple[str, dict[str, str], str | None] | None:
    """(the URL with `_HOST` in place of its hosts and without `target_session_attrs`, each
    `host:port` with the form it is written in, the query that refuses a host), or None for
    a URL left to asyncpg."""
    parts = urlsplit(url)
    userinfo, _, hostlist = parts.netloc.rpartition("@")
    query = parse_qsl(parts.query, keep_blank_values=True)
    if not hostlist or any(name == "host" for name, _ in query):
        return None
    wanted = dict(query).get("target_session_attrs") or os.environ.get(
        "PGTARGETSESSIONATTRS", "any"
    )
    if wanted not in _REFUSES:
        return None
    kept = urlencode([(name, value) for name, value in query if name != "target_session_attrs"])
    netloc = f"{userinfo}@{_HOST}" if userinfo else _HOST
    template = urlunsplit((parts.scheme, netloc, parts.path, kept, parts.fragment))
    hosts = {_named(host): host for host in hostlist.split(",") if host}
    return template, hosts, _REFUSES[wanted]


def _named(host: str) -> str:
    """`host:port` as a log names it (the default port said)."""
    if host.startswith("["):
        return host if "]:" in host else f"{host}:5432"
    return host if ":" in host else f"{host}:5432"


def _failed(failures: list[tuple[str, BaseException | None]]) -> StoreError:
    said = "; ".join(f"{host}: {_reason(error)}" for host, error in failures)
    errors = [error for _, error in failures if error is not None]
    if len(errors) < len(failures):  # one answered, read-only
        return DatabaseReadOnly(f"PostgreSQL has no writable host: {said}")
    failed: StoreError
    if all(isinstance(translate(error), StoreUnavailable) for error in errors):
        failed = DatabaseDown(f"PostgreSQL unreachable: {said}")
    else:  # refused for good: a password, a database that does not exist
        failed = StoreError(f"PostgreSQL refused the connection: {said}")
    failed.__cause__ = errors[-1]
    return failed


def _reason(error: BaseException | None) -> str:
    if error is None:
        return _READ_ONLY
    text = str(error) or type(error).__name__
    return text if isinstance(error, asyncpg.PostgresError) else f"{type(error).__name__}: {text}"


class Outage:
    """Says in the log when connecting starts failing, every `STILL_DOWN_EVERY` seconds
    while it does, and when it works again: one line per change, whatever the number of
    tries (the pool's connections, its floor, the LISTEN connection, every second)."""

    def __init__(self) -> None:
        self._since: float | None = None
        self._said_at = 0.0
        self._read_only = False  # what was said last: no writable host, or none reachable
        self._lost = False  # a connection was lost since the last one was made

    def failed(self, error: StoreUnavailable) -> None:
        now = time.monotonic()
        read_only = isinstance(error, DatabaseReadOnly)
        if self._since is None:
            self._since = self._said_at = now
            self._read_only = read_only
            log.warning("cannot connect to the database: %s", error)
        elif now - self._said_at >= STILL_DOWN_EVERY or read_only != self._read_only:
            self._said_at = now
            self._read_only = read_only
            log.warning(
                "still cannot connect to the database, for %.0f s: %s", now - self._since, error
            )

    def lost(self, error: StoreUnavailable) -> None:
        """A connection was lost in the middle of a call (the server went away, or ended
        it): said once until a connection is made again, which tells whether it is away."""
        if not self._lost and self._since is None:
            log.info("lost a connection to the database (%s); making it again", error)
        self._lost = True

    def ended(self) -> None:
        self._lost = False
        if self._since is not None:
            log.warning(
                "connected to the database again, after %.1f s", time.monotonic() - self._since
            )
            self._since = None
