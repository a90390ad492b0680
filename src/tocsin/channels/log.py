"""The `log` channel: each ring is one line in the log — the way to try Tocsin."""

from __future__ import annotations

import logging

from tocsin.channels.base import DeliveryResult, Sender
from tocsin.clock import Clock
from tocsin.domain import Firing

logger = logging.getLogger("tocsin.ring")


class LogSender(Sender[None]):
    """Writes the ring to the `tocsin.ring` logger; the facts are in the message (so any
    formatter shows them) and in `extra` (so a structured formatter can pick them out)."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock

    async def target(self, firing: Firing) -> None:
        return None

    async def send(self, firing: Firing, target: None, *, time_limit: float) -> DeliveryResult:
        lateness = (self._clock.now() - firing.due_at).total_seconds()
        due = firing.due_at.strftime("%Y-%m-%dT%H:%M:%SZ")
        logger.info(
            "ring %s owner=%s due=%s late=%.3fs: %s",
            firing.reminder_id,
            firing.owner,
            due,
            lateness,
            firing.text,
            extra={
                "firing_id": firing.id,
                "reminder_id": firing.reminder_id,
                "owner": firing.owner,
                "text": firing.text,
                "due": due,
                "lateness_seconds": round(lateness, 3),
            },
        )
        return DeliveryResult.sent()
