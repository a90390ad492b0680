"""The delivery queue's port: the firings that need a sender, and what became of each round."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Protocol

from tocsin.domain import AttemptResult, Firing, Outcome


class DeliveryQueue(Protocol):
    """The firings table as the durable delivery queue: take the firings that need a sender,
    record what each round's attempts did, hand back what was not sent, write the rings of
    claims whose sender's hold ran out, and say which destinations earlier rounds settled."""

    @abstractmethod
    async def take_deliveries(
        self, *, sender: str, shards: range | None, now: datetime, lease: timedelta, limit: int
    ) -> list[Firing]:
        """Firings that need a sender: `queued` with `next_attempt_at <= now`, or `sending`
        with `lease_until < now` (its sender vanished), in `shards` when given. Those past
        their deadline (`deadline <= now`) are set `expired` instead, `last_error` saying so
        (all of them, or at least `limit`, per call), and not returned. Of the rest, the
        `limit` with the earliest deadlines become `sending` held by `sender` until
        `now + lease` and are returned — each to one caller only, even with many callers at once."""

    @abstractmethod
    async def record_attempts(self, results: Sequence[AttemptResult]) -> int:
        """Record each attempt and move its firing to `result.state` (setting `sent_at`,
        `provider_id`, `last_error`, `attempts`, `next_attempt_at` as the result says), only
        while the firing is `sending` held by `result.sender`. A result without an attempt
        moves the firing and sets `last_error` only (no history entry, `attempts` unchanged).
        A first try accepted with nothing to say (`result.sent_to`) on the firing's own
        channel is kept on the firing row rather than as a history row, and `list_firings`
        and `settled_destinations` give it back as that row would: the common ring costs one
        row write here, not two. A result carrying its firing (`result.firing`, a ring
        whose row the claim did not write) writes that row, with the result in it; it
        applies while the row is not there yet, or is there only as `recover_claims` wrote
        it and no sender has taken it since. Return how many applied."""

    @abstractmethod
    async def release_deliveries(
        self, firings: Sequence[Firing], *, sender: str, now: datetime
    ) -> int:
        """Hand firings back unsent: those still `sending` held by `sender` become `queued`
        with `next_attempt_at = now` (any worker's `take_deliveries` takes them at once);
        their attempts are unchanged. A ring whose row the claim did not write
        (`Firing.stored` False) is written so. Return how many were released."""

    async def recover_claims(self, *, now: datetime, limit: int) -> int:
        """Write, `queued` for any sender at once, the rings that claims handed to a sender
        whose hold ran out before `now` without their firing written (the sender stopped,
        or could not reach the database in time), from up to `limit` such claims; forget
        those claims. Return how many rings were written. A store whose claim writes every
        firing (`Firing.stored` always True) has none."""
        return 0

    @abstractmethod
    async def settled_destinations(self, firing_id: str) -> dict[str, Outcome]:
        """The destinations a firing's attempts settled for good — sent, or failed — by
        destination id (with the outcome): a retry goes to the others only. An attempt
        recorded with no destination (a channel of the firing's route that had none) is
        keyed `channel:<name>`."""
