"""Reads the status board from the store and keeps it a moment.

Every read is bounded whatever the database holds (a billion reminders, 3 million due in one
minute): the minutes ahead count at most `DUE_CAP` index entries a minute, the last hour
reads at most `RINGS_PER_MINUTE` firings a minute, the queue counts stop at `QUEUE_CAP`, and
workers and leases are two small tables. The board is read at most once per
`KEEP_SECONDS` per API process, however many pages poll it; concurrent requests share one
read.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

from tocsin.clock import Clock
from tocsin.domain import FiringState, Lateness, RingMinute, WorkerState
from tocsin.store.codec import EPOCH, bucket_of
from tocsin.store.ports import StatusReads
from tocsin.time import format_utc

MINUTES = 60  # ahead and behind
DUE_CAP = 10_000  # per minute ahead: 600,000 index entries at most in all
RINGS_PER_MINUTE = 1_000  # per minute behind: 60,000 rows at most in all
QUEUE_CAP = 100_000
KEEP_SECONDS = 2.0


class Board:
    """The status board of one store, as `GET /v1/status` answers it."""

    def __init__(self, store: StatusReads, clock: Clock, *, parts: int, lease_seconds: float):
        self._store = store
        self._clock = clock
        self._parts = parts
        self._lease = timedelta(seconds=lease_seconds)
        self._kept: tuple[datetime, dict[str, Any]] | None = None
        self._lock = asyncio.Lock()

    async def read(self) -> dict[str, Any]:
        """The board as of at most `KEEP_SECONDS` ago (`StoreError` when the store fails)."""
        async with self._lock:
            now = self._clock.now()
            if self._kept is not None and timedelta(0) <= now - self._kept[0] < _KEEP:
                return self._kept[1]
            board = await self._read(now)
            self._kept = (now, board)
            return board

    async def _read(self, now: datetime) -> dict[str, Any]:
        minute = bucket_of(now)
        workers = await self._store.list_workers()
        due = await self._store.count_due(
            first_bucket=minute, last_bucket=minute + MINUTES - 1, cap=DUE_CAP
        )
        rings = await self._store.sample_rings(
            first_minute=minute - MINUTES + 1, last_minute=minute, per_minute=RINGS_PER_MINUTE
        )
        queue = await self._store.count_queue(cap=QUEUE_CAP)
        quiet = await self._store.count_quiet_held(cap=QUEUE_CAP)
        alive = [w for w in workers if now - w.heartbeat_at < self._lease]
        return {
            "as_of": format_utc(now),
            "parts": self._parts,
            "lease_seconds": self._lease.total_seconds(),
            "workers": [_worker(w, w in alive) for w in workers],
            "ahead": {
                "cap": DUE_CAP,
                "overdue": due.overdue,
                "minutes": [
                    {"minute": _minute(m), "due": due.buckets.get(m, 0)}
                    for m in range(minute, minute + MINUTES)
                ],
            },
            "rings": {
                "per_minute": RINGS_PER_MINUTE,
                "minutes": [_ring_minute(m) for m in rings],
            },
            "queue": {
                "cap": QUEUE_CAP,
                "queued": queue[FiringState.QUEUED],
                "sending": queue[FiringState.SENDING],
                "quiet": quiet,
            },
            "breakers": [
                {"worker": w.worker, "provider": provider} for w in alive for provider in w.breakers
            ],
        }


_KEEP = timedelta(seconds=KEEP_SECONDS)


def _minute(bucket: int) -> str:
    return format_utc(EPOCH + timedelta(minutes=bucket))


def _worker(worker: WorkerState, alive: bool) -> dict[str, Any]:
    return {
        "id": worker.worker,
        "heartbeat_at": format_utc(worker.heartbeat_at),
        "alive": alive,
        "parts": list(worker.parts),
        "breakers": list(worker.breakers),
    }


def _ring_minute(minute: RingMinute) -> dict[str, Any]:
    return {
        "minute": _minute(minute.minute),
        "sent": minute.sent,
        "failed": minute.failed,
        "expired": minute.expired,
        "waiting": minute.waiting,
        "sampled": minute.read >= RINGS_PER_MINUTE,
        "lateness": _lateness(minute.lateness),
    }


def _lateness(lateness: Lateness | None) -> dict[str, float] | None:
    if lateness is None:
        return None
    return {
        "p50": round(lateness.p50, 3),
        "p99": round(lateness.p99, 3),
        "max": round(lateness.max, 3),
    }
