"""The notifier: wake-ups and announcements between processes, apart from storage.

Listeners hear them in this process, and on PostgreSQL in every process (NOTIFY, delivered
at commit). They are hints: one may be missed while a connection is made again, or repeat,
so what a hint points at is also read from the database by other means.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Protocol

DueListener = Callable[[int, datetime], None]
"""Called with (shard, due_at) when a reminder became due soon; see `Notifier.listen_due`."""

FeedListener = Callable[[str, str], None]
"""Called with (owner, firing id) when an in-app ring waits for the owner's feed; see
`Notifier.listen_feed`."""

WAKE_HORIZON = timedelta(minutes=2)
"""A write wakes `listen_due` listeners only for a pending reminder due this soon after its
`updated_at`: anything later is read by the scheduler's ordinary load-ahead."""


class Notifier(Protocol):
    """Wake-ups and announcements: a reminder came due soon, leases changed, an owner's
    tokens were revoked, an in-app ring waits for its owner's pages."""

    @abstractmethod
    async def listen_due(self, listener: DueListener) -> Callable[[], None]:
        """Call `listener(shard, due_at)` whenever a reminder is saved or moved to pending
        with a due time at most `WAKE_HORIZON` (2 minutes) after its `updated_at` (overdue
        included; later ones are the scheduler's ordinary load-ahead) — in this process, and
        on PostgreSQL in every process (NOTIFY, after commit). `due_at` is floored to the
        second; a batch announces each distinct (shard, second) once. Wake-ups may be missed
        while a connection is re-made and may repeat: they are hints, the sweep is the
        guarantee. Return a function that stops listening. Listeners must not block."""

    @abstractmethod
    async def listen_leases(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call `listener()` whenever a worker joined or leases were let go (in this process,
        and on PostgreSQL in every process), so that workers renew at once and no part waits
        a renewal period unheld. Hints, like `listen_due`: may be missed or repeat. Return a
        function that stops listening. Listeners must not block."""

    @abstractmethod
    async def listen_revocations(self, listener: Callable[[str], None]) -> Callable[[], None]:
        """Call `listener(owner)` after `revoke_owner_tokens` drew a line for `owner` — in
        this process, and on PostgreSQL in every process (NOTIFY `tocsin_revocations`, after
        commit). Hints, like `listen_due`: missed while a connection is re-made, and on
        SQLite whenever another process revoked (`tocsin keys`), so a listener must also
        read `owner_tokens_revoked_before` now and then. Return a function that stops
        listening. Listeners must not block."""

    @abstractmethod
    async def listen_feed(
        self, listener: FeedListener, *, on_gap: Callable[[], None]
    ) -> Callable[[], None]:
        """Call `listener(owner, firing_id)` for every `announce_feed` ring, and `on_gap()`
        after announcements may have been missed (the LISTEN connection was made again), so
        the listener re-reads what its pages wait for. Return a function that stops
        listening. Listeners must not block."""

    @abstractmethod
    async def announce_feed(self, rings: Sequence[tuple[str, str]]) -> None:
        """Tell `listen_feed` listeners that these (owner, firing id) in-app rings wait for
        the owner's feed — in this process, and on PostgreSQL in every process (one NOTIFY
        `tocsin_feed` each, in one statement). Hints, like `listen_due`: a missed one stays
        `queued` and is read by `feed_firings` when a page (re)connects."""
