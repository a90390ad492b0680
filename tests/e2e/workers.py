"""Real `tocsin worker` processes for end-to-end tests, and what the database says of them."""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from tests.integration.engine.support import eventually, reminder
from tocsin.clock import SystemClock
from tocsin.domain import Channel, Reminder

# Few parts, short leases and a quick sweep: takeovers happen within seconds.
ENV = {
    "TOCSIN_PARTS": "4",
    "TOCSIN_LEASE_SECONDS": "2",
    "TOCSIN_SWEEP_SECONDS": "0.5",
    "TOCSIN_WEBHOOK_TIMEOUT_SECONDS": "2",
    "TOCSIN_DELIVERY_CONCURRENCY": "32",
    "TOCSIN_ALLOW_PRIVATE_URLS": "true",  # the receiver peer listens on loopback
}


# libfaketime, preloaded into the process itself (the `faketime` command would stand between
# the test and the process, and killing it would leave the process running).
FAKETIME = next(
    (
        path
        for path in sorted(glob.glob("/usr/lib/*/faketime/libfaketimeMT.so.1"))
        + sorted(glob.glob("/usr/lib*/faketime/libfaketimeMT.so.1"))
    ),
    None,
)


def wrong_clock(offset: str) -> dict[str, str]:
    """The environment that runs a process with its wall clock `offset` off (`+30s`):
    only the wall clock, the event loop's monotonic clock runs true. Skips the test where
    libfaketime is not installed — never under CI, which installs it."""
    if FAKETIME is None:
        if os.environ.get("CI") == "true":
            pytest.fail("faketime is required under CI (.ci/run installs it)")
        pytest.skip("needs libfaketime (Debian package faketime) to run on a wrong clock")
    return {"LD_PRELOAD": FAKETIME, "FAKETIME": offset, "FAKETIME_DONT_FAKE_MONOTONIC": "1"}


@dataclass
class Worker:
    """One `tocsin worker` process; its log lines go to `log`."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        return self.log.read_text()

    def terminate(self, timeout: float = 30) -> int:
        """SIGTERM, and its exit status once it stopped (gracefully)."""
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout)


class Workers:
    """Starts workers and makes sure none outlives the test."""

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self.started: list[Worker] = []

    def start(
        self,
        db_url: str,
        name: str,
        *args: str,
        env: dict[str, str] | None = None,
        **settings: str,
    ) -> Worker:
        """A worker with `settings` (`TOCSIN_…=…`) and more `env`ironment."""
        log = self._folder / f"{name}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "tocsin", "worker", "--db", db_url,
                 "--worker-id", name, *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, **ENV, **(env or {}), **settings},
            )  # fmt: skip
        worker = Worker(name=name, process=process, log=log)
        self.started.append(worker)
        return worker

    def stop_all(self) -> None:
        for worker in self.started:
            if worker.process.poll() is None:
                worker.process.kill()
                worker.process.wait(10)


@contextmanager
def workers(folder: Path) -> Iterator[Workers]:
    started = Workers(folder)
    try:
        yield started
    except BaseException:
        for worker in started.started:  # what each worker said, beside the failure
            print(f"--- {worker.name} ---\n{worker.output()}", file=sys.stderr)
        raise
    finally:
        started.stop_all()


async def query(db_url: str, sql: str, *args: Any) -> list[asyncpg.Record]:
    """Rows of one query, on a connection of its own."""
    connection = await asyncpg.connect(db_url)
    try:
        rows: list[asyncpg.Record] = await connection.fetch(sql, *args)
        return rows
    finally:
        await connection.close()


async def holders(db_url: str) -> dict[str, int]:
    """How many of the 4 parts each worker holds now."""
    rows = await query(
        db_url,
        "SELECT holder, count(*) AS held FROM leases "
        "WHERE parts = 4 AND holder IS NOT NULL AND expires_at > now() GROUP BY holder",
    )
    return {row["holder"]: row["held"] for row in rows}


async def firing_states(db_url: str) -> dict[str, int]:
    rows = await query(db_url, "SELECT state, count(*) AS n FROM firings GROUP BY state")
    return {row["state"]: row["n"] for row in rows}


clock = SystemClock()


def spread(count: int, first: float, last: float, *, freshness: int = 600) -> list[Reminder]:
    """`count` webhook reminders of as many owners, due from `first` to `last` seconds on."""
    start = clock.now().replace(microsecond=0)
    step = (last - first) / max(count - 1, 1)
    return [
        reminder(
            f"owner-{n}",
            now=start,
            at=start + timedelta(seconds=round(first + n * step)),
            channel=Channel.WEBHOOK,
            freshness=freshness,
        )
        for n in range(count)
    ]


def until(instant: datetime) -> float:
    return max(0.0, (instant - clock.now()).total_seconds())


async def wait_all_sent(db_url: str, count: int, within: float) -> None:
    async def done() -> bool:
        return (await firing_states(db_url)).get("sent", 0) == count

    await eventually(done, within=within, every=0.2)


async def latenesses(db_url: str) -> list[float]:
    rows = await query(db_url, "SELECT extract(epoch FROM sent_at - due_at) AS late FROM firings")
    return sorted(float(row["late"]) for row in rows)
