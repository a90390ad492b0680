"""What one ring costs the machine: WAL (`pg_stat_wal`), the PostgreSQL server's CPU and the
workers' CPU (`/proc/<pid>/stat`), sampled around a firing window and divided by its rings.

`pg_stat_wal` and the server's CPU are the whole server's: they include whatever else it did
meanwhile (other databases: `other_transactions` counts their transactions), so they are for
a quiet sitting.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import asyncpg

if TYPE_CHECKING:  # processes imports httpx, which building the `tocsin` parser need not load
    from tocsin_bench.processes import Process

# The name of the benchmark's own sessions (its store), so that a window can wait for them to
# end: a session reports its WAL counts at most once a second while busy, up to 10 s after it
# goes idle, and always when it exits (PostgreSQL 15, pgstat.c).
BENCH_APPLICATION = "tocsin-bench"
SESSIONS_END_SECONDS = 15.0
# An exiting session leaves pg_stat_activity just before it reports its counts.
REPORT_GRACE_SECONDS = 0.5
# pg_postmaster_start_time() and the start /proc gives the postmaster agree within this.
START_TOLERANCE_SECONDS = 10.0
SCAN_ATTEMPTS = 5
TICKS_PER_S = os.sysconf("SC_CLK_TCK")

_WAL = """
SELECT pg_current_wal_insert_lsn()::text, wal_bytes::bigint, wal_records, wal_fpi,
       (SELECT coalesce(sum(xact_commit + xact_rollback), 0)::bigint FROM pg_stat_database
        WHERE datname IS DISTINCT FROM current_database())
FROM pg_stat_wal
"""
_SERVER = "SELECT pg_backend_pid(), extract(epoch FROM pg_postmaster_start_time())::float8"
_SESSIONS = """
SELECT pid FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
"""
_OTHER_SESSIONS = """
SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid()
  AND backend_type = 'client backend' AND ($1::text IS NULL OR application_name = $1)
"""


@dataclass(frozen=True, kw_only=True)
class WalCounters:
    """The server's WAL counters at one instant."""

    lsn: str  # the insert position, for `pg_waldump --start/--end`
    bytes: int
    records: int
    fpi: int  # full-page images
    elsewhere: int  # transactions ended in the other databases so far


async def wal_counters(connection: asyncpg.Connection) -> WalCounters | None:
    """The counters now, or None on a server without `pg_stat_wal` (before PostgreSQL 14)."""
    try:
        row = await connection.fetchrow(_WAL)
    except asyncpg.UndefinedTableError:
        return None
    assert row is not None
    return WalCounters(lsn=row[0], bytes=row[1], records=row[2], fpi=row[3], elsewhere=row[4])


async def report_counts(connection: asyncpg.Connection) -> None:
    """Make this session report its pending counts now (they are in `pg_stat_wal` when this
    returns: a session reports them before it answers ready)."""
    try:
        await connection.execute("SELECT pg_stat_force_next_flush()")
    except asyncpg.UndefinedFunctionError:
        await asyncio.sleep(1.0)  # PostgreSQL 14: its collector hears within 0.5 s


def wal_per_ring(
    before: WalCounters | None, after: WalCounters | None, rings: int
) -> dict[str, Any]:
    """The WAL between two samples, a ring, with the range for `pg_waldump`."""
    if before is None or after is None:
        return {
            "wal_bytes": None,
            "wal_records": None,
            "wal_fpi": None,
            "wal_null_reason": "no pg_stat_wal on this server (it came in PostgreSQL 14)",
        }
    return {
        "wal_bytes": _per(after.bytes - before.bytes, rings, 1),
        "wal_records": _per(after.records - before.records, rings, 2),
        "wal_fpi": _per(after.fpi - before.fpi, rings, 3),
        "wal_range": f"{before.lsn}-{after.lsn}",
        "other_transactions": after.elsewhere - before.elsewhere,
    }


def tagged(url: str) -> str:
    """`url` with the benchmark's application name, for the sessions a window waits out."""
    joiner = "&" if "?" in url else "?"
    return f"{url}{joiner}application_name={BENCH_APPLICATION}"


@dataclass(frozen=True, kw_only=True)
class _CpuSample:
    at: float  # monotonic seconds
    server: int | None  # clock ticks; None when the server's processes are not here
    sessions: dict[int, int]  # clock ticks of each session of the database, by pid
    workers: int | None  # None when a worker has exited


class Window:
    """The firing window of a run, in three steps: `open` after the save, before the first
    due instant; `end` once every firing is final, while the workers live (their CPU is read
    from their processes); `close` once the workers have stopped and their sessions ended,
    when every WAL count they made has been reported."""

    def __init__(self, url: str, workers: Sequence[Process]) -> None:
        self._url = url
        self._workers = list(workers)
        self._postmaster: int | None = None
        self._no_server_cpu: str | None = None
        self._wal_before: WalCounters | None = None
        self._wal_after: WalCounters | None = None
        self._opened: _CpuSample | None = None
        self._ended: _CpuSample | None = None

    async def open(self) -> None:
        """Wait until the benchmark's own sessions (`tagged`) have ended, then sample."""
        await _sessions_ended(self._url, BENCH_APPLICATION)
        connection = await asyncpg.connect(self._url)
        try:
            backend, started = await connection.fetchrow(_SERVER)
            self._postmaster, self._no_server_cpu = locate_server(backend, started)
            self._wal_before = await wal_counters(connection)
            self._opened = await self._cpu(connection)
        finally:
            await connection.close()

    async def end(self) -> None:
        connection = await asyncpg.connect(self._url)
        try:
            self._ended = await self._cpu(connection)
        finally:
            await connection.close()

    async def close(self) -> None:
        await _sessions_ended(self._url, None)
        connection = await asyncpg.connect(self._url)
        try:
            self._wal_after = await wal_counters(connection)
        finally:
            await connection.close()

    def per_ring(self, rings: int, row_writes: float | None) -> dict[str, Any]:
        """The report's `cost_per_ring`, once the window is closed."""
        opened, ended = self._opened, self._ended
        if opened is None or ended is None:
            raise RuntimeError("per_ring of a window not opened and ended")
        cost = wal_per_ring(self._wal_before, self._wal_after, rings)
        cost["db_cpu_us"] = _cpu_per_ring(opened.server, ended.server, rings)
        cost["db_sessions_cpu_us"] = None
        if cost["db_cpu_us"] is None:
            cost["db_cpu_null_reason"] = self._no_server_cpu
        else:
            cost["db_sessions_cpu_us"] = _cpu_per_ring(0, _sessions_ticks(opened, ended), rings)
        cost["worker_cpu_us"] = _cpu_per_ring(opened.workers, ended.workers, rings)
        if cost["worker_cpu_us"] is None:
            cost["worker_cpu_null_reason"] = "a worker exited during the window"
        cost["row_writes"] = row_writes
        cost["rings"] = rings
        cost["window_s"] = round(ended.at - opened.at, 2)
        return cost

    async def _cpu(self, connection: asyncpg.Connection) -> _CpuSample:
        pids = [row[0] for row in await connection.fetch(_SESSIONS)] if self._postmaster else []
        ticks = [process_ticks(worker.pid) for worker in self._workers]
        known = [tick for tick in ticks if tick is not None]
        return _CpuSample(
            at=time.monotonic(),
            server=self._server_ticks(),
            sessions={pid: tick for pid in pids if (tick := process_ticks(pid)) is not None},
            workers=sum(known) if len(known) == len(ticks) else None,
        )

    def _server_ticks(self) -> int | None:
        if self._postmaster is None:
            return None
        try:
            return server_ticks(self._postmaster)
        except OSError as error:  # a restart: the postmaster measured has gone
            self._no_server_cpu = f"the server's CPU is not measured: {error}"
            return None


def _sessions_ticks(opened: _CpuSample, ended: _CpuSample) -> int:
    """The CPU the database's sessions used in the window: those that lived to its end (one
    that began in it counts whole); another database's work is not in it, nor the server's
    background processes', nor that of sessions that ended in the window."""
    return sum(tick - opened.sessions.get(pid, 0) for pid, tick in ended.sessions.items())


def _cpu_per_ring(before: int | None, after: int | None, rings: int) -> float | None:
    if before is None or after is None:
        return None
    return _per(_us(after - before), rings, 1)


def describe(cost: Mapping[str, Any]) -> str:
    """`cost_per_ring` in one line."""
    wal = "WAL n/a"
    if cost.get("wal_bytes") is not None:
        wal = (
            f"{cost['wal_bytes']:,.0f} B WAL, {cost['wal_records']:.1f} records, "
            f"{cost['wal_fpi']:.2f} full-page images"
        )
    database, sessions = _or_na(cost.get("db_cpu_us")), _or_na(cost.get("db_sessions_cpu_us"))
    cpu = (
        f"CPU {database} µs database (its sessions {sessions}) + "
        f"{_or_na(cost.get('worker_cpu_us'))} µs workers"
    )
    writes = cost.get("row_writes")
    written = f"{writes:.2f} row writes" if isinstance(writes, int | float) else "row writes n/a"
    rings = f"{cost.get('rings', 0):,} rings in {cost.get('window_s', 0.0):.1f} s"
    others = f"{cost.get('other_transactions', 0):,} transactions in other databases"
    notes = "".join(
        f"; {cost[key]}"
        for key in ("wal_null_reason", "db_cpu_null_reason", "worker_cpu_null_reason")
        if cost.get(key)
    )
    return f"{wal}; {cpu}; {written} ({rings}; {others}){notes}"


def locate_server(backend: int, started_at: float) -> tuple[int | None, str | None]:
    """The postmaster of the server whose session is `backend` (started at `started_at`,
    epoch seconds), if its processes are on this machine; else None and why not."""
    try:
        session = _stat(backend)
        if session is None or session.comm != "postgres":
            return None, (
                f"the server's CPU is not measured: its session's process {backend} is not a "
                "postgres process here (the server runs on another machine or in a container)"
            )
        parent = _stat(session.ppid)
        if parent is None or parent.comm != "postgres":
            return None, f"the server's CPU is not measured: no postmaster above {backend}"
        if abs(_boot_time() + parent.started / TICKS_PER_S - started_at) > START_TOLERANCE_SECONDS:
            return None, (
                f"the server's CPU is not measured: process {session.ppid} here is another "
                "PostgreSQL server than the one measured"
            )
    except OSError as error:
        return None, f"the server's CPU is not measured: /proc is not readable ({error})"
    return session.ppid, None


def server_ticks(postmaster: int) -> int:
    """CPU clock ticks (user + system) of the postmaster and its children so far; a child
    that has ended is in the postmaster's count of its reaped children. A child reaped while
    /proc is read would be in neither count, or in both: then it is read again."""
    total = 0
    for _ in range(SCAN_ATTEMPTS):
        before = _postmaster_stat(postmaster)
        children = sum(
            stat.ticks
            for entry in os.scandir("/proc")
            if entry.name.isdigit()
            and (stat := _stat(int(entry.name))) is not None
            and stat.ppid == postmaster
        )
        after = _postmaster_stat(postmaster)
        total = after.ticks + children
        if before.reaped == after.reaped:
            break
    return total


def _postmaster_stat(pid: int) -> _Stat:
    stat = _stat(pid)
    if stat is None:
        raise OSError(f"the postmaster {pid} has gone")
    return stat


@dataclass(frozen=True, kw_only=True)
class _Stat:
    pid: int
    comm: str
    ppid: int
    own: int  # utime + stime
    reaped: int  # cutime + cstime: the children it has waited for
    started: int  # clock ticks after boot

    @property
    def ticks(self) -> int:
        return self.own + self.reaped


def _stat(pid: int) -> _Stat | None:
    """/proc/<pid>/stat, or None when there is no such process (any more)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # The name is in parentheses and may hold spaces and parentheses itself.
    head, _, tail = text.rpartition(")")
    fields = tail.split()  # fields[0] is the state, field 3 of proc(5)
    return _Stat(
        pid=pid,
        comm=head.partition("(")[2],
        ppid=int(fields[1]),
        own=int(fields[11]) + int(fields[12]),
        reaped=int(fields[13]) + int(fields[14]),
        started=int(fields[19]),
    )


def process_ticks(pid: int) -> int | None:
    """CPU clock ticks (user + system) of process `pid` and its reaped children so far, or
    None when there is no such process."""
    stat = _stat(pid)
    return None if stat is None else stat.ticks


def _boot_time() -> float:
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("btime "):
            return float(line.split()[1])
    raise OSError("no btime in /proc/stat")


async def _sessions_ended(url: str, application: str | None) -> None:
    """Wait until no other session (named `application`, if given) is in the database, then
    a little longer, so that they have reported their counts (at most SESSIONS_END_SECONDS:
    a session idle that long has reported them anyway)."""
    give_up = time.monotonic() + SESSIONS_END_SECONDS
    connection = await asyncpg.connect(url)
    try:
        while time.monotonic() < give_up:
            if await connection.fetchval(_OTHER_SESSIONS, application) == 0:
                break
            await asyncio.sleep(0.1)
    finally:
        await connection.close()
    await asyncio.sleep(REPORT_GRACE_SECONDS)


def _us(ticks: int) -> float:
    return ticks * 1_000_000 / TICKS_PER_S


def _per(total: float, rings: int, digits: int) -> float | None:
    return round(total / rings, digits) if rings else None


def _or_na(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"
