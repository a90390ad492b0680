"""`tocsin chaos`: Tocsin on PostgreSQL under faults, checked end to end.

One `tocsin api`, `--workers` `tocsin worker`s and the local webhook receiver run as
processes on a throw-away database. Reminders due at `--rate` a second for `--duration` are
created through the API ahead of their due time, while workers are SIGKILLed and restarted,
PostgreSQL is stopped once, the receiver answers 503 for a while, and cancels, snoozes and
edits race reminders in their due second (timetable: `chaos_plan`). When every reminder is
final or past its deadline, the database and the receiver's record of every arrival are
checked (`chaos_checks`) and reported (`chaos_report`).
"""

from __future__ import annotations

import asyncio
import os
import random
import tempfile
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from tocsin.channels.signing import new_secret
from tocsin_bench import chaos_faults as faults
from tocsin_bench.chaos_checks import judge, read_records
from tocsin_bench.chaos_plan import ChaosSpec, Plan, Window, plan
from tocsin_bench.chaos_report import lateness_by_fault
from tocsin_bench.chaos_workload import REQUEST_TIMEOUT, Creator, Ledger, Racer
from tocsin_bench.databases import migrated_store, server_url, throwaway
from tocsin_bench.processes import (
    Process,
    spawn,
    start_receiver,
    start_server,
    tocsin_env,
)
from tocsin_bench.progress import note

INITIAL_LEAD = 10  # seconds from the end of the set-up to the first due instant
LEASE_WAIT_SECONDS = 60.0
# Seconds after a fault during which rings due may still pay for it: a killed worker's parts
# are taken over up to one lease (10 s) after the kill; after an outage, the backlog it left
# is claimed and sent first.
CONSEQUENCE = 15.0
SETTLE_POLL = 2.0
SETTLE_MARGIN = 30.0  # past the last deadline, before giving up on the settle
_UNFINISHED = """
SELECT (SELECT count(*) FROM due AS d WHERE NOT EXISTS (
            SELECT 1 FROM rings AS g
            WHERE (g.due_at, g.reminder_id, g.version) = (d.due_at, d.reminder_id, d.version)
        ))
     + (SELECT count(*) FROM firings WHERE state IN ('queued', 'sending'))
"""


@dataclass
class Stage:
    """The running processes of one run, and where they log."""

    url: str
    logs: Path
    receiver: Process
    receiver_url: str
    api: Process
    api_url: str
    crew: faults.Crew

    def processes(self) -> list[Process]:
        return [*self.crew.all(), self.api, self.receiver]


async def run_chaos(spec: ChaosSpec) -> dict[str, Any]:
    """Run it on a throw-away database; the report (`violations` empty when all held)."""
    if spec.failover:
        from tocsin_bench.chaos_failover import run_failover

        return await run_failover(spec)
    server = spec.pg_url or os.environ.get("TOCSIN_TEST_POSTGRES") or server_url(None)
    cluster = faults.local_cluster(server) if "postgres" not in spec.skip else "skipped"
    async with throwaway("postgres", pg_url=server) as url:
        await (await migrated_store(url)).close()
        logs = Path(tempfile.mkdtemp(prefix="tocsin-chaos-"))
        started: list[Process] = []
        outage = faults.PostgresOutage(cluster) if isinstance(cluster, faults.Cluster) else None
        try:
            stage = set_up(spec, url, logs, started)
            return await _run(spec, stage, outage, cluster)
        finally:
            if outage is not None:
                outage.ensure_started()
            for process in started:
                process.stop()


def set_up(spec: ChaosSpec, url: str, logs: Path, started: list[Process]) -> Stage:
    """The receiver, the API and the workers; each put in `started` as soon as it runs."""
    secret = new_secret()
    receiver, receiver_url = start_receiver(secret, logs)
    started.append(receiver)
    api, api_url = start_server("api", url, logs)
    started.append(api)
    settings = {
        "webhook_url": f"{receiver_url}/hook",
        "webhook_secret": secret,
        "allow_private_urls": "true",  # the local receiver
    }
    env = tocsin_env(url, **settings)

    def start_worker(name: str) -> Process:
        args = ["worker", "--db", url, "--worker-id", name]
        worker = spawn(name, args, env, logs, python_module="tocsin")
        started.append(worker)
        return worker

    crew = faults.Crew(start=start_worker)
    for _ in range(spec.workers):
        crew.add()
    return Stage(url, logs, receiver, receiver_url, api, api_url, crew)


async def _run(
    spec: ChaosSpec,
    stage: Stage,
    outage: faults.PostgresOutage | None,
    cluster: faults.Cluster | str,
) -> dict[str, Any]:
    note(f"chaos: {spec.workers} workers starting; logs in {stage.logs}")
    await wait_for_leases(stage)
    timetable = plan(spec, int(time.time()) + INITIAL_LEAD)
    if "receiver" not in spec.skip:
        _fail_receiver(stage.receiver_url, timetable.receiver)
    ledger = Ledger()
    first = time.strftime("%H:%M:%S", time.localtime(timetable.first_due))
    note(f"chaos: rings due for {spec.duration:.0f} s from {first}")
    async with httpx.AsyncClient(base_url=stage.api_url, timeout=REQUEST_TIMEOUT) as client:
        await gather(_tasks(spec, timetable, stage, outage, client, ledger))
    note("chaos: window over; waiting for every ring to be final or past its deadline")
    settled = await settle(stage.url, give_up_at(spec, timetable))
    for worker in [*stage.crew.all(), stage.api]:
        worker.stop()  # nothing changes while the records are read
    stats = await asyncio.to_thread(receiver_arrivals, stage.receiver_url)
    records = await read_records(stage.url, stats)
    verdict = judge(ledger, records, time.time())
    windows = _windows(timetable, stage.crew, outage, spec)
    return {
        "scenario": "chaos",
        "params": spec.params(),
        "violations": verdict.summary(),
        "metrics": {
            "settled": settled,
            "counts": verdict.counts,
            "faults": _faults(stage.crew, outage, cluster, timetable, spec),
            "lateness": lateness_by_fault(records, windows),
            "logs": str(stage.logs),
        },
    }


def _tasks(
    spec: ChaosSpec,
    timetable: Plan,
    stage: Stage,
    outage: faults.PostgresOutage | None,
    client: httpx.AsyncClient,
    ledger: Ledger,
) -> list[Coroutine[Any, Any, None]]:
    tasks = [Creator(spec, timetable, client, ledger).run()]
    if "races" not in spec.skip:
        tasks.append(Racer(spec, timetable, client, ledger).run())
    if "kills" not in spec.skip:
        rng = random.Random(spec.seed)
        tasks.append(faults.kill_workers(stage.crew, timetable, rng))
    if outage is not None:
        tasks.append(outage.run(timetable))
    tasks.append(_heartbeat(timetable, stage.crew, ledger))
    return tasks


async def _heartbeat(timetable: Plan, crew: faults.Crew, ledger: Ledger) -> None:
    """A line on stderr now and then, so a long run shows it is alive."""
    every = max(10.0, timetable.duration / 10)
    while time.time() < timetable.last_due:
        await asyncio.sleep(every)
        into = time.time() - timetable.first_due
        note(
            f"chaos: {into:+.0f} s: {len(ledger.due):,} created, {len(crew.kills)} kills, "
            f"{len(ledger.races)} races"
        )


async def gather(coroutines: list[Coroutine[Any, Any, None]]) -> None:
    """Run them all; the first error cancels the rest and is raised."""
    tasks = [asyncio.create_task(coroutine) for coroutine in coroutines]
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _fail_receiver(receiver_url: str, window: Window) -> None:
    response = httpx.post(
        f"{receiver_url}/fail", params={"from": window.start, "until": window.end}, timeout=10
    )
    response.raise_for_status()


def receiver_arrivals(receiver_url: str) -> dict[str, Any]:
    """The receiver's counts with every identity's arrivals."""
    response = httpx.get(f"{receiver_url}/stats", params={"ids": "1"}, timeout=120)
    response.raise_for_status()
    stats: dict[str, Any] = response.json()
    return stats


async def wait_for_leases(stage: Stage) -> None:
    """Until every part is held by a live lease (the database is new: its only lease rows
    are those of the workers' part count)."""
    give_up = time.monotonic() + LEASE_WAIT_SECONDS
    sql = "SELECT count(*) = count(*) FILTER (WHERE expires_at > now()) AND count(*) > 0 "
    sql += "FROM leases"
    while time.monotonic() < give_up:
        for worker in stage.crew.live:
            if not worker.alive():
                raise RuntimeError(f"{worker.name} exited: see {stage.logs}")
        connection = await asyncpg.connect(stage.url)
        try:
            if await connection.fetchval(sql):
                return
        finally:
            await connection.close()
        await asyncio.sleep(0.5)
    raise RuntimeError(f"the workers did not hold every part within {LEASE_WAIT_SECONDS} s")


def give_up_at(spec: ChaosSpec, timetable: Plan) -> float:
    """The latest deadline a reminder of the run can have, and a margin."""
    moved = max(spec.snooze, spec.edit_by)
    return timetable.last_due + moved + spec.freshness + SETTLE_MARGIN


async def settle(url: str, give_up: float) -> bool:
    """Wait until nothing is pending and every firing is final; False when `give_up` came
    first. The database may be away (a restart): then wait and ask again."""
    while time.time() < give_up:
        await asyncio.sleep(SETTLE_POLL)
        try:
            connection = await asyncpg.connect(url)
            try:
                left = await connection.fetchval(_UNFINISHED)
            finally:
                await connection.close()
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
            continue
        if left == 0:
            return True
    return False


def _windows(
    timetable: Plan, crew: faults.Crew, outage: faults.PostgresOutage | None, spec: ChaosSpec
) -> list[Window]:
    """Each fault's window, with its CONSEQUENCE after it."""
    windows = faults.kill_windows(crew)
    if outage is not None and outage.held is not None:
        windows.append(outage.held)
    if "receiver" not in spec.skip:
        windows.append(timetable.receiver)
    return [Window(w.name, w.start, w.end + CONSEQUENCE) for w in windows]


def _faults(
    crew: faults.Crew,
    outage: faults.PostgresOutage | None,
    cluster: faults.Cluster | str,
    timetable: Plan,
    spec: ChaosSpec,
) -> dict[str, Any]:
    postgres: dict[str, Any] | str = (
        outage.held.as_dict()
        if outage is not None and outage.held is not None
        else (cluster if isinstance(cluster, str) else "did not happen")
    )
    receiver = "skipped" if "receiver" in spec.skip else timetable.receiver.as_dict()
    return {
        "kill_every_s": round(timetable.kill_every, 1),
        "kills": crew.kills,
        "exits": crew.exits,
        "postgres": postgres,
        "receiver": receiver,
    }
