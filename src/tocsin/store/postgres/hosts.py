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

import os
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import asyncpg

from tocsin.errors import DatabaseReadOnly, StoreError, StoreUnavailable
from tocsin.store.postgres import queries as q
from tocsin.store.postgres.failures import DRIVER_ERRORS, translate

# What each `target_session_attrs` asks of a host, as one query that is true when the host
# will not do; None: any host that answers will do.
_REFUSES = {"any": None, "read-write": q.READ_ONLY}
_READ_ONLY = "read-only (a standby, or default_transaction_read_only is on)"
_HOST = "\x00host\x00"  # where each host goes in the URL (no URL holds a NUL)


class Hosts:
    """`connect()` for one URL: each host tried in turn, the last usable one first."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._parsed = _split(url)
        self._preferred: str | None = None

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
        if self._parsed is None:
            return await asyncpg.connect(self._url, **options)
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
        failed = StoreUnavailable(f"PostgreSQL unreachable: {said}")
    else:  # refused for good: a password, a database that does not exist
        failed = StoreError(f"PostgreSQL refused the connection: {said}")
    failed.__cause__ = errors[-1]
    return failed


def _reason(error: BaseException | None) -> str:
    if error is None:
        return _READ_ONLY
    text = str(error) or type(error).__name__
    return text if isinstance(error, asyncpg.PostgresError) else f"{type(error).__name__}: {text}"
