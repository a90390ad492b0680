"""`bench api`: the HTTP API as apps use it — single creates per second (closed loop, several
connections), their latency at a fixed offered load (open loop: measured from when each
request was due to be sent, so a slow server cannot hide its queue), and creates per second
through `POST /v1/reminders:batch` (1,000 items a request).

`api_workers` > 1 runs `tocsin api --workers N` (PostgreSQL only): N processes on one port,
with the load generator and PostgreSQL on the same cores."""

from __future__ import annotations

import asyncio
import itertools
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from tocsin_bench.databases import migrated_store, throwaway
from tocsin_bench.http import Connection, open_loop
from tocsin_bench.population import Population
from tocsin_bench.processes import (
    Process,
    peak_rss,
    start_server,
)
from tocsin_bench.progress import note
from tocsin_bench.stats import rate, spread

CREATE = "/v1/reminders"
BATCH = "/v1/reminders:batch"
BATCH_ITEMS = 1000
BATCH_CONNECTIONS = 2


@dataclass(frozen=True, kw_only=True)
class ApiSpec:
    db: str = "postgres"
    rate: int = 500
    duration: float = 10.0
    connections: int = 16
    api_workers: int = 1
    pg_url: str | None = None

    def __post_init__(self) -> None:
        if self.api_workers < 1 or (self.api_workers > 1 and self.db != "postgres"):
            raise ValueError("api_workers is 1, or more on PostgreSQL (`tocsin api --workers`)")

    def params(self) -> dict[str, Any]:
        return {
            "db": self.db,
            "offered_per_s": self.rate,
            "duration_s": self.duration,
            "connections": self.connections,
            "api_workers": self.api_workers,
        }


async def run_api(spec: ApiSpec) -> dict[str, Any]:
    async with throwaway(spec.db, pg_url=spec.pg_url) as url:
        store = await migrated_store(url)
        await store.close()
        command = "serve" if spec.db == "sqlite" else "api"
        logs = Path(tempfile.mkdtemp(prefix="tocsin-bench-logs-"))
        if spec.api_workers > 1:
            workers = ["--workers", str(spec.api_workers)]
            server, base = start_server("api", url, logs, args=workers)
        else:
            server, base = start_server(command, url, logs)
        try:
            metrics = await _measure(spec, base, server)
        finally:
            server.stop()
    metrics["server"] = command
    return {"scenario": "api", "params": spec.params(), "metrics": metrics}


async def _measure(spec: ApiSpec, base: str, server: Process) -> dict[str, Any]:
    bodies = _bodies()
    await _closed_loop(base, bodies, 4, 1.0)  # warm up: connections, caches, JIT-less paths
    note(f"api: closed loop, {spec.connections} connections, {spec.duration:.0f} s")
    closed = await _closed_loop(base, bodies, spec.connections, spec.duration)
    note(f"api: open loop at {spec.rate}/s, {spec.duration:.0f} s")
    opened = await _open_loop(base, bodies, spec.rate, spec.duration)
    note(f"api: batches of {BATCH_ITEMS}, {BATCH_CONNECTIONS} connections")
    batch = await _batches(base, spec.duration)
    return {
        "single_creates_per_s": closed["per_s"],
        "single_latency_ms_closed": closed["latency_ms"],
        "errors_closed": closed["errors"],
        "at_offered_rate": opened,
        "batch_creates_per_s": batch["per_s"],
        "batch_request_ms": batch["latency_ms"],
        "errors_batch": batch["errors"],
        "server_peak_rss_mb": round(_peak_rss(server) / 2**20, 1),
    }


def _peak_rss(server: Process) -> int:
    """The largest peak RSS among the server and the API processes it forked (bytes)."""
    children = Path(f"/proc/{server.pid}/task/{server.pid}/children")
    try:
        pids = [int(pid) for pid in children.read_text().split()]
    except OSError:
        pids = []
    return max([server.sample(), *(peak_rss(pid) for pid in pids)])


def _bodies(count: int = 20_000) -> list[bytes]:
    """Create requests as apps send them: one-offs at local wall times and series."""
    population = Population(seed=9)
    items = []
    for reminder in itertools.islice(population.mixed(count), count):
        item: dict[str, Any] = {
            "owner": reminder.owner,
            "text": reminder.text,
            "channel": "webhook",
            "zone": reminder.schedule.zone,
        }
        if reminder.repeat:
            item["repeat"] = reminder.repeat
        else:
            item["at"] = reminder.at
        items.append(orjson.dumps(item))
    return items


async def _closed_loop(
    base: str, bodies: list[bytes], connections: int, duration: float
) -> dict[str, Any]:
    source = itertools.cycle(bodies)
    latencies: list[float] = []
    errors: dict[int, int] = {}
    stop = time.perf_counter() + duration

    async def client() -> None:
        connection = await Connection.open(base)
        try:
            while time.perf_counter() < stop:
                began = time.perf_counter()
                status, _ = await connection.post(CREATE, next(source))
                latencies.append((time.perf_counter() - began) * 1000)
                if status != 201:
                    errors[status] = errors.get(status, 0) + 1
        finally:
            await connection.close()

    began = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(connections)))
    elapsed = time.perf_counter() - began
    ok = len(latencies) - sum(errors.values())
    return {
        "per_s": round(rate(ok, elapsed), 1),
        "latency_ms": _ms(latencies),
        "errors": {str(k): v for k, v in errors.items()},
    }


async def _open_loop(
    base: str, bodies: list[bytes], offered: int, duration: float
) -> dict[str, Any]:
    """Send `offered` creates a second on schedule (`http.open_loop`)."""
    source = itertools.cycle(bodies)
    requests = [(CREATE, next(source)) for _ in range(int(offered * duration))]
    done = await open_loop(base, requests, offered, lambda _n, status, _body: status == 201)
    served = len(done.latencies_ms)
    return {
        "offered_per_s": offered,
        "achieved_per_s": round(rate(served, done.elapsed), 1),
        "latency_ms": _ms(done.latencies_ms),
        "connections_opened": done.opened,
        "errors": done.errors,
    }


async def _batches(base: str, duration: float) -> dict[str, Any]:
    items = [orjson.loads(body) for body in _bodies(BATCH_ITEMS * 4)]
    payloads = [
        orjson.dumps({"items": items[start : start + BATCH_ITEMS]})
        for start in range(0, len(items), BATCH_ITEMS)
    ]
    source = itertools.cycle(payloads)
    created = 0
    latencies: list[float] = []
    errors: dict[int, int] = {}
    stop = time.perf_counter() + duration

    async def client() -> None:
        nonlocal created
        connection = await Connection.open(base)
        try:
            while time.perf_counter() < stop:
                began = time.perf_counter()
                status, body = await connection.post(BATCH, next(source))
                latencies.append((time.perf_counter() - began) * 1000)
                if status == 200:
                    created += int(orjson.loads(body)["created"])
                else:
                    errors[status] = errors.get(status, 0) + 1
        finally:
            await connection.close()

    began = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(BATCH_CONNECTIONS)))
    elapsed = time.perf_counter() - began
    return {
        "per_s": round(rate(created, elapsed), 1),
        "latency_ms": _ms(latencies),
        "errors": {str(k): v for k, v in errors.items()},
    }


def _ms(values: list[float]) -> dict[str, float]:
    return {key: round(value, 2) for key, value in spread(values).items()}
