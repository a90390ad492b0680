"""The scheduler's port: due rings read by part, claimed, and the parts' leases and watermarks."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Protocol

from tocsin.domain import Claim, DueRing, Fence, Firing, HeldParts


class SchedulerStore(Protocol):
    """What the scheduler reads and writes: each part's due rings (`load_due`), the claim
    that rings them (`claim`), the leases and watermarks of the parts (`renew_leases`,
    `release_leases`, `advance_watermark`), and the database's clock they are judged by."""

    @abstractmethod
    async def load_due(
        self,
        *,
        shards: range,
        first_bucket: int,
        last_bucket: int,
        limit: int,
        after: tuple[datetime, str] | None = None,
        priority: int | None = None,
        until: datetime | None = None,
    ) -> list[DueRing]:
        """The next rings of pending reminders whose bucket (UTC epoch minute of `due_at`) is in
        [first_bucket, last_bucket] and whose shard is in `shards`, ordered by (`due_at`,
        `id`), at most `limit`. With `after` = (due_at, id) of the last row of a previous
        page, only rows ordered after it (keyset paging: held rows are not read again).
        With `until`, none due after it (the scan stops there).
        With `priority` (a `Priority.rank`), only the reminders of that priority: a read
        that never passes over the other priority's rows. An index range scan, never a full
        scan."""

    @abstractmethod
    async def load_saved(
        self,
        *,
        shards: range,
        since: datetime | None,
        last_bucket: int,
        limit: int,
        priority: int | None = None,
        through: datetime | None = None,
    ) -> tuple[list[DueRing], datetime]:
        """The sweep's read: the occurrences API writes saved after `since` (all of them when
        None) by the database's clock, in buckets up to `last_bucket` (and in that bucket,
        with `through`, none due after it), whose shard is in
        `shards`, that no claim or API write decided since, in due order, at most `limit`;
        and the database's clock when it read, from which the next sweep reads (less a
        margin for writes that commit late). The occurrences a claim appends (a series' next)
        are never among them: the claim that appends one holds it."""

    @abstractmethod
    async def claim(
        self,
        claims: Sequence[Claim],
        *,
        sender: str,
        now: datetime,
        lease: timedelta,
        fence: Fence | None = None,
    ) -> list[Firing]:
        """Apply many claims in one transaction. For each claim whose row is still exactly
        what was loaded — `pending`, `due_at == claim.due_at`, `version == claim.version` —
        and, with a `fence`, whose part (`claim.part`) `sender` still holds at the fence's
        epoch for it: move the row on (`next_due_at` set: stays pending with
        the new due_at and bucket; else status `fired` for a one-off or `ended` for a
        series), bump its version, and ring it: one firing with id `firing_id(reminder,
        due_at)` built from the row (text, channel, owner, metadata, source, deadline =
        due_at + freshness) in state `claim.state` — for `sending`, held by `sender` until
        `now + lease`. A claim whose row moved on changes nothing; a firing id that was
        recorded already rings no more. Return the rings, in no particular order.

        A ring for `sending` may come back unwritten (`Firing.stored` False): the claim
        then keeps only a record of the rings it handed to `sender`, and the firing row is
        written once, by `record_attempts` with the outcome of its first try, or by
        `release_deliveries`. If neither comes before the hold runs out, `recover_claims`
        writes it `queued`, for any sender, under the same identity."""

    @abstractmethod
    async def renew_leases(
        self, worker: str, *, parts: int, ttl: timedelta, breakers: Sequence[str] = ()
    ) -> HeldParts:
        """Heartbeat for `worker` (with the providers whose circuit breaker it has open,
        `breakers`, kept on its heartbeat row for `list_workers`) and rebalance, by the
        database's clock `now` (never the worker's; on SQLite, the host's): count live
        workers (heartbeat within `ttl`), keep held parts (extending them to `now + ttl`) up
        to the fair share ceil(parts / live), release the excess, and take free or expired
        parts up to the share, each at a new epoch. Two workers never hold one part at once.
        Return the parts held with their watermarks and epochs, `now` (`as_of`), how long
        until the first lease another worker holds runs out, and how many of the parts taken
        another worker's expired lease held (`taken_over`). When a worker joined or parts
        were released, tell `listen_leases` listeners (every process on PostgreSQL) after
        commit."""

    @abstractmethod
    async def release_leases(self, worker: str, *, parts: Sequence[int] | None = None) -> None:
        """Give up the worker's leases on `parts` (all when None), and, for all, its
        heartbeat, so others may take them over at once; tell `listen_leases` listeners."""

    @abstractmethod
    async def advance_watermark(
        self, worker: str, *, part: int, bucket: int, swept_at: datetime
    ) -> bool:
        """Record that `part` finished every bucket up to `bucket`, as found by the sweep that
        read at `swept_at` (`load_saved`), only while `worker` holds the part and the
        watermark is lower. Return whether it was recorded."""

    @abstractmethod
    async def database_time(self) -> datetime:
        """The database's clock now: what leases, claims and deadlines are judged by. Every
        process that decides by time keeps its clock in step with it (`DatabaseClock`)."""
