"""`bench arrivals`: everyone gets home at once. `owners` owners each have a place and a
reminder that rings on arriving there; their devices report the arrivals at `rate` a second
(open loop: latency counts from when each report was due to be sent, so a slow server cannot
hide its queue) to `tocsin api` (`api_workers` processes), and `workers` `tocsin worker`s
send the rings to the local webhook receiver. Reports: crossings answered a second, p99 from
the report's due instant to the ring's arrival at the receiver, and on PostgreSQL the WAL
and the database's CPU a ring (`costs.Window`: a quiet sitting)."""

from __future__ import annotations

import asyncio
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import orjson

from tocsin.api.changes import new_reminder
from tocsin.api.models import ReminderIn
from tocsin.channels.signing import new_secret
from tocsin.domain import Place
from tocsin.ids import new_reminder_id, shard_of
from tocsin.store import Store
from tocsin_bench import waldump
from tocsin_bench.costs import Window
from tocsin_bench.databases import migrated_store, throwaway
from tocsin_bench.http import open_loop
from tocsin_bench.processes import (
    Process,
    receiver_stats,
    start_receiver,
    start_server,
    start_workers,
)
from tocsin_bench.progress import note
from tocsin_bench.stats import rate, spread

SAVE_BATCH = 1000
SETTLE_SECONDS = 120.0


@dataclass(frozen=True, kw_only=True)
class ArrivalsSpec:
    db: str = "postgres"
    owners: int = 10_000
    rate: int = 10_000
    workers: int = 2
    api_workers: int = 1
    pg_url: str | None = None

    def params(self) -> dict[str, Any]:
        return {
            "db": self.db,
            "crossings": self.owners,
            "offered_per_s": self.rate,
            "workers": self.workers,
            "api_workers": self.api_workers,
        }


async def run_arrivals(spec: ArrivalsSpec) -> dict[str, Any]:
    logs = Path(tempfile.mkdtemp(prefix="tocsin-bench-logs-"))
    async with throwaway(spec.db, pg_url=spec.pg_url) as url:
        store = await migrated_store(url)
        try:
            note(f"arrivals: saving {spec.owners:,} places, each with a reminder on arrival")
            places = await _save(store, spec.owners)
        finally:
            await store.close()
        secret = new_secret()
        receiver, sink = start_receiver(secret, logs)
        settings = {
            "webhook_url": f"{sink}/hook",
            "webhook_secret": secret,
            "allow_private_urls": "true",  # the local receiver
        }
        processes: list[Process] = [receiver]
        try:
            metrics = await _measure(spec, url, logs, places, settings, processes, sink)
        finally:
            for process in reversed(processes):
                process.stop()
    return {"scenario": "arrivals", "params": spec.params(), "metrics": metrics}


async def _measure(
    spec: ArrivalsSpec,
    url: str,
    logs: Path,
    places: list[tuple[str, str]],
    settings: dict[str, str],
    processes: list[Process],
    sink: str,
) -> dict[str, Any]:
    workers: list[Process] = []
    command, args = "serve", []  # SQLite: one process holds the file, API and engine
    if spec.db == "postgres":
        workers = start_workers(spec.workers, url, logs, null=False, **settings)
        processes += workers
        command, args = "api", ["--workers", str(spec.api_workers)]
    server, base = start_server(command, url, logs, args=args, **settings)
    processes.append(server)
    window = Window(url, [server, *workers]) if spec.db == "postgres" else None
    if window is not None:
        await window.open()
    note(f"arrivals: {len(places):,} crossings offered at {spec.rate:,}/s")
    sent = await _report(base, places, spec.rate)
    arrived = await _arrivals(sink, len(sent["due"]))
    if window is not None:
        await window.end()
    latencies = [arrived[firing] - due for firing, due in sent["due"].items() if firing in arrived]
    metrics: dict[str, Any] = {
        "crossings_per_s": sent["per_s"],
        "answer_ms": sent["answer_ms"],
        "rang": len(sent["due"]),
        "delivered": len(latencies),
        "errors": sent["errors"],
        "crossing_to_sent_s": {k: round(v, 3) for k, v in spread(latencies).items()},
    }
    if window is not None:
        for process in reversed(processes[1:]):
            process.stop()
        await window.close()
        cost = window.per_ring(len(latencies), None)
        metrics["cost_per_ring"] = cost
        if cost.get("wal_range"):
            connection = await asyncpg.connect(url)
            try:
                metrics["wal_by_relation"] = await waldump.by_relation(
                    connection, cost["wal_range"], len(latencies)
                )
            finally:
                await connection.close()
    return metrics


async def _save(store: Store, owners: int) -> list[tuple[str, str]]:
    """A place and a reminder on arriving there for each owner: (owner, place id) pairs."""
    now = datetime.now(UTC)
    pairs: list[tuple[str, str]] = []
    for start in range(0, owners, SAVE_BATCH):
        reminders = []
        for number in range(start, min(owners, start + SAVE_BATCH)):
            owner = f"home-{number:06d}"
            shard = shard_of(owner)
            place = Place(
                id=new_reminder_id(shard, now),
                owner=owner,
                shard=shard,
                name="Home",
                latitude=52.52,
                longitude=13.405,
                radius_m=150,
                created_at=now,
                updated_at=now,
            )
            await store.add_place(place)
            item = ReminderIn.model_validate(
                {
                    "owner": owner,
                    "text": "Take the bins out",
                    "zone": "Europe/Berlin",
                    "channel": "webhook",
                    "on": {"place": place.id},
                }
            )
            reminders.append(new_reminder(item, owner=owner, source=None, now=now))
            pairs.append((owner, place.id))
        await store.add_reminders(reminders)
    return pairs


async def _report(base: str, places: list[tuple[str, str]], offered: int) -> dict[str, Any]:
    """Each owner's arrival, `offered` a second on schedule (`http.open_loop`), the device's
    time the instant it was due; when each ring's report was due (wall clock, by firing id)."""
    wall_began = time.time()
    walls = [wall_began + n / offered for n in range(len(places))]
    requests = [
        (
            f"/v1/owners/{owner}/places/{place}/events",
            orjson.dumps({"event": "arrive", "at": _instant(wall)}),
        )
        for (owner, place), wall in zip(places, walls, strict=True)
    ]
    due_at: dict[str, float] = {}

    def answered(n: int, status: int, body: bytes) -> bool:
        if status != 200:
            return False
        for ring in orjson.loads(body)["rang"]:
            due_at[ring["firing"]] = walls[n]
        return True

    done = await open_loop(base, requests, offered, answered)
    return {
        "per_s": round(rate(len(done.latencies_ms), done.elapsed), 1),
        "answer_ms": {k: round(v, 1) for k, v in spread(done.latencies_ms).items()},
        "due": due_at,
        "errors": done.errors,
    }


def _instant(wall: float) -> str:
    return datetime.fromtimestamp(wall, UTC).isoformat(timespec="seconds")


async def _arrivals(sink: str, expected: int) -> dict[str, float]:
    """When each ring first reached the receiver (wall clock, by firing id), once all
    `expected` have or SETTLE_SECONDS passed."""
    give_up = time.monotonic() + SETTLE_SECONDS
    while True:
        stats = await asyncio.to_thread(receiver_stats, sink)
        if stats["unique"] >= expected or time.monotonic() > give_up:
            break
        await asyncio.sleep(0.5)
    stats = await asyncio.to_thread(lambda: _stats_with_ids(sink))
    return {
        firing: min(at for at, status in tries if status < 300)
        for firing, tries in stats["arrivals"].items()
        if any(status < 300 for _, status in tries)
    }


def _stats_with_ids(sink: str) -> dict[str, Any]:
    import httpx

    response = httpx.get(f"{sink}/stats?ids", timeout=60)
    response.raise_for_status()
    stats: dict[str, Any] = response.json()
    return stats
