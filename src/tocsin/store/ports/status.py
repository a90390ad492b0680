"""The status reads' port: bounded reads for the status board and the metrics."""

from __future__ import annotations

from abc import abstractmethod
from typing import Protocol

from tocsin.domain import DueCounts, FiringState, QueueStats, RingMinute, WorkerState


class StatusReads(Protocol):
    """What operators read: the workers and their parts, what is due, the last hour's rings
    and the queue, each read bounded however large the tables are."""

    @abstractmethod
    async def list_workers(self) -> list[WorkerState]:
        """Every worker with a heartbeat row (live, or silent for less than 10 lease times:
        older rows are forgotten at renewals), by id, each with the parts it holds a lease
        on that has not run out (by the database's clock) and the breakers it reported at
        its last heartbeat. Reads the two small tables `workers` and `leases` whole."""

    @abstractmethod
    async def count_due(self, *, first_bucket: int, last_bucket: int, cap: int) -> DueCounts:
        """How many pending reminders are due in each bucket of [first_bucket, last_bucket],
        and overdue (in any earlier bucket), each counted up to `cap`. One range scan of
        `reminders_due` per bucket, at most `cap` index entries each: the cost is bounded
        however many reminders are stored or due in one minute."""

    @abstractmethod
    async def sample_rings(
        self, *, first_minute: int, last_minute: int, per_minute: int
    ) -> list[RingMinute]:
        """For each UTC epoch minute of [first_minute, last_minute], in order: the firings
        due in it — all of them, or the `per_minute` earliest due of a minute that has more —
        counted by outcome, with p50, p99 (nearest rank) and max of `sent_at - due_at` of
        the sent ones. One range scan of `firings_due` per minute, stopped at `per_minute`;
        on PostgreSQL aggregated there, so 60 minutes answer 60 rows."""

    @abstractmethod
    async def count_queue(self, *, cap: int) -> dict[FiringState, int]:
        """How many firings are `queued` and how many `sending`, each counted up to `cap`
        (range scans of the partial indexes `firings_queued` and `firings_sending`)."""

    @abstractmethod
    async def count_quiet_held(self, *, cap: int) -> int:
        """How many of the first `cap` `queued` firings wait for their owner's quiet hours to
        end (`tocsin.time.quiet.QUIET_HELD`)."""

    @abstractmethod
    async def queue_stats(self) -> QueueStats:
        """The delivery queue's depth by state (`queued`, `sending`) and the due time of the
        oldest pending reminder, for metrics. Each number is an index-only read of a partial
        index (firings_queued, firings_sending, the first entry of reminders_due), never a
        scan of the tables; cheap enough for every scrape, not for every ring."""
