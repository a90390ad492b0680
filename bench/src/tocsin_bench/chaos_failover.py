"""`tocsin chaos --failover`: the chaos run's load and checks on a highly available
PostgreSQL of its own (`tocsin_bench.ha`), through the loss of the primary's server and then
a planned switchover.

Every Tocsin process connects with the cluster's multi-host URL. At FAILOVER_AT of the window
the primary's server is killed (SIGKILL to its keeper and postmaster); once the monitor has
promoted the standby, the old primary's keeper starts again and rejoins as the standby. At
SWITCHOVER_AT, `pg_autoctl perform switchover`. Beside the batches of the ring load, single
creates with their own Idempotency-Key go through the API all along, retried until answered
201, as an app would. Checked on top of the chaos run's checks (among them: no identity
accepted twice sooner than a retry of one firing could be, `chaos_checks._check_repeats`): no
create answered 5xx other than 503, every 503 a problem with Retry-After, and no reminder
saved twice. Reported for each fault: how long rings stopped and what that was made of (the
monitor's events, then the first claim and the first ring on the new primary), and the
lateness of the rings due during it.
"""

from __future__ import annotations

import asyncio
import itertools
import tempfile
import time
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from tocsin_bench import chaos, ha
from tocsin_bench.chaos_checks import EXAMPLES, Records, judge, read_records
from tocsin_bench.chaos_plan import FAULTS, ChaosSpec, Plan, Window, plan
from tocsin_bench.chaos_report import lateness_by_fault
from tocsin_bench.chaos_workload import REQUEST_TIMEOUT, Creator, Ledger, iso
from tocsin_bench.databases import migrated_store
from tocsin_bench.processes import Process
from tocsin_bench.progress import note

FAILOVER_AT, SWITCHOVER_AT = 0.25, 0.65  # fractions of the window
UNPLANNED, PLANNED = "unplanned failover", "planned switchover"
SINGLES_PER_SECOND = 5.0
SINGLE_AHEAD = 15.0  # seconds before its due a single create is sent
RECOVERY_SECONDS = 120.0  # the longest a promotion or a rejoin may take
_SAVED_TWICE = "SELECT text, count(*) AS n FROM reminders GROUP BY text HAVING count(*) > 1"


async def run_failover(spec: ChaosSpec) -> dict[str, Any]:
    """The run on a cluster it starts and stops; the report, as `run_chaos`'s."""
    cluster = await ha.started_cluster()
    started: list[Process] = []
    try:
        await (await migrated_store(cluster.url)).close()
        logs = Path(tempfile.mkdtemp(prefix="tocsin-failover-"))
        stage = chaos.set_up(spec, cluster.url, logs, started)
        return await _run(spec, stage, cluster)
    finally:
        for process in started:
            process.stop()
        cluster.stop()


async def _run(spec: ChaosSpec, stage: chaos.Stage, cluster: ha.Cluster) -> dict[str, Any]:
    note(f"failover: {spec.workers} workers starting; logs in {stage.logs}")
    await chaos.wait_for_leases(stage)
    timetable = plan(spec, int(time.time()) + chaos.INITIAL_LEAD)
    ledger = Ledger()
    faults: dict[str, dict[str, Any]] = {}
    async with httpx.AsyncClient(base_url=stage.api_url, timeout=REQUEST_TIMEOUT) as client:
        await chaos.gather(
            [
                Creator(spec, timetable, client, ledger).run(),
                _singles(timetable, client, ledger, spec.freshness),
                _faults(cluster, timetable, faults),
            ]
        )
    note("failover: window over; waiting for every ring to be final or past its deadline")
    settled = await chaos.settle(stage.url, chaos.give_up_at(spec, timetable))
    for worker in [*stage.crew.all(), stage.api]:
        worker.stop()
    stats = await asyncio.to_thread(chaos.receiver_arrivals, stage.receiver_url)
    records = await read_records(stage.url, stats)
    verdict = judge(ledger, records, time.time())
    windows = [Window(name, f["start"], f["end"] + chaos.CONSEQUENCE) for name, f in faults.items()]
    _check_api(verdict.flag, ledger)
    for text in await _saved_twice(stage.url):
        verdict.flag("saved_twice", text)
    _measure_stops(records, faults)
    return {
        "scenario": "chaos --failover",
        "params": {**spec.params(), "skipped": sorted(FAULTS)},  # the failover's alone
        "violations": verdict.summary(),
        "metrics": {
            "settled": settled,
            "counts": {
                **verdict.counts,
                "answers": {str(k): v for k, v in sorted(ledger.answers.items())},
            },
            "faults": faults,
            "lateness": lateness_by_fault(records, windows),
            "logs": str(stage.logs),
        },
    }


async def _faults(cluster: ha.Cluster, timetable: Plan, faults: dict[str, dict[str, Any]]) -> None:
    """Kill the primary's server, bring it back as the standby; then switch over."""
    await _sleep_until(timetable.first_due + FAILOVER_AT * timetable.duration)
    old = await cluster.primary()
    assert old is not None, "no primary before the failover"
    new = next(node.name for node in cluster.nodes if node.name != old)
    note(f"failover: killing {old}'s server (keeper, postmaster and backends)")
    killed = cluster.kill(old)
    promoted = await cluster.wait_for({new: "wait_primary"}, RECOVERY_SECONDS)
    note(f"failover: {new} promoted {promoted - killed:.1f} s after the kill; {old} rejoining")
    cluster.restart(old)
    rejoined = await cluster.wait_for({old: "secondary", new: "primary"}, RECOVERY_SECONDS)
    events = await cluster.events(killed)
    faults[UNPLANNED] = {
        "start": killed,
        "end": rejoined,
        "killed": old,
        "promoted": new,
        "detected_after_s": _first(events, killed, new, "prepare_promotion"),
        "writable_after_s": round(promoted - killed, 2),
        "rejoined_after_s": round(rejoined - killed, 2),
    }
    await _sleep_until(timetable.first_due + SWITCHOVER_AT * timetable.duration)
    note(f"failover: planned switchover from {new} to {old}")
    asked = await cluster.switchover()
    done = await cluster.wait_for({old: "primary", new: "secondary"}, RECOVERY_SECONDS)
    faults[PLANNED] = {
        "start": asked,
        "end": done,
        "from": new,
        "to": old,
        "writable_after_s": _first(await cluster.events(asked), asked, old, "wait_primary"),
        "done_after_s": round(done - asked, 2),
    }
    note(f"failover: switchover done in {done - asked:.1f} s")


def _first(events: list[tuple[float, str, str, str]], since: float, node: str, goal: str) -> Any:
    """Seconds from `since` to the monitor's first event assigning `node` the `goal`."""
    for at, name, _reported, assigned in events:
        if name == node and assigned == goal:
            return round(at - since, 2)
    return None


async def _singles(timetable: Plan, client: httpx.AsyncClient, ledger: Ledger, fresh: int) -> None:
    """One-by-one creates all through the window, each retried with its key until 201."""
    number = 0
    pending: set[asyncio.Task[None]] = set()
    while time.time() < timetable.last_due - SINGLE_AHEAD:
        number += 1
        task = asyncio.create_task(_single(number, client, ledger, fresh))
        pending.add(task)
        task.add_done_callback(pending.discard)
        await asyncio.sleep(1 / SINGLES_PER_SECOND)
    await asyncio.gather(*pending)


async def _single(number: int, client: httpx.AsyncClient, ledger: Ledger, fresh: int) -> None:
    due = int(time.time() + SINGLE_AHEAD)
    body = {
        "owner": f"single-{number % 97}",
        "text": f"single {number}",
        "channel": "webhook",
        "zone": "UTC",
        "at": iso(due),
        "freshness": f"{fresh}s",
    }
    headers = {"Idempotency-Key": f"single-{number}"}
    while time.time() < due:
        try:
            response = await client.post("/v1/reminders", json=body, headers=headers)
        except httpx.HTTPError:
            response = None
        ledger.note_answer(response)
        if response is not None and response.status_code == 201:
            ledger.add(response.json()["id"], due, response.headers.get("ETag", ""))
            return
        if response is not None and response.status_code < 500:
            break  # refused for good (its due time passed meanwhile)
        await asyncio.sleep(0.5)
    ledger.not_created += 1


def _check_api(flag: Any, ledger: Ledger) -> None:
    for status, count in ledger.answers.items():
        if status >= 500 and status != 503:
            flag("api_5xx", f"{count} creates answered {status}")
    if ledger.unreadable_503:
        flag("api_503_unreadable", f"{ledger.unreadable_503} 503s without Retry-After problem")


async def _saved_twice(url: str) -> list[str]:
    connection = await asyncpg.connect(url)
    try:
        rows = await connection.fetch(_SAVED_TWICE)
    finally:
        await connection.close()
    return [f"{row['text']} ×{row['n']}" for row in rows[:EXAMPLES]]


def _measure_stops(records: Records, faults: dict[str, dict[str, Any]]) -> None:
    """Add to each fault how long rings stopped (`rings_stopped_s`, the issue's measure).

    Unplanned: from the kill to the first ring claimed on the new primary (a firing written
    by a claim made after the kill: the old primary was dead by then); `first_claim_after_s`
    is its claim, so that the time splits into detection (`detected_after_s`), promotion and
    the demote timeout (to `writable_after_s`), reconnect (to the first claim) and the send.
    Planned: the old primary answers until it is demoted, so the longest time no ring arrived
    across the switchover (`longest_gap_s`, reported for both)."""
    for fault in faults.values():
        fault["longest_gap_s"] = _silence(records, fault["start"], fault["end"])
        fault["rings_stopped_s"] = fault["longest_gap_s"]
    unplanned = faults.get(UNPLANNED)
    if unplanned is None:
        return
    killed = unplanned["start"]
    claims = [f for f in records.firings.values() if f.created_at >= killed]
    # At or after the claim that wrote it: a ring sent before the kill whose result was
    # lost with the old primary is written on the new one by RECOVER_CLAIMS, after its send.
    rings = [
        t
        for firing in claims
        for t, status in records.arrivals.get(firing.id, ())
        if status < 300 and t >= firing.created_at
    ]
    first_claim = min((f.created_at for f in claims), default=None)
    unplanned["first_claim_after_s"] = _since(killed, first_claim)
    unplanned["first_ring_after_s"] = _since(killed, min(rings, default=None))
    unplanned["rings_stopped_s"] = unplanned["first_ring_after_s"]


def _silence(records: Records, start: float, end: float) -> float:
    """The longest time no ring was accepted, among gaps that overlap [start, end]."""
    times = sorted(
        t
        for arrivals in records.arrivals.values()
        for t, status in arrivals
        if status < 300 and start - 60 <= t <= end + 120
    )
    gaps = [
        after - before
        for before, after in itertools.pairwise(times)
        if after >= start and before <= end
    ]
    return round(max(gaps, default=0.0), 2)


def _since(start: float, instant: float | None) -> float | None:
    return None if instant is None else round(instant - start, 2)


async def _sleep_until(epoch: float) -> None:
    await asyncio.sleep(max(0.0, epoch - time.time()))
