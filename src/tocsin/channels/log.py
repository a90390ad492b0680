"""The `log` channel: each ring is one line in the log — the way to try Tocsin."""

from __future__ import annotations

import logging

from tocsin.channels.base import DeliveryResult, Destination, DestinationSender
from tocsin.clock import Clock
from tocsin.domain import Firing

logger = logging.getLogger("tocsin.ring")


class LogSender(DestinationSender):
    """Writes the ring to the `tocsin.ring` logger, one line: the text in the message, the
    facts (reminder, owner, due, lateness) in `extra` for the structured formatter. Its one
    destination is the log itself."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock

    async def send(
        self, firing: Firing, destination: Destination, *, time_limit: float
    ) -> DeliveryResult:
        lateness = (self._clock.now() - firing.due_at).total_seconds()
        due = firing.due_at.strftime("%Y-%m-%dT%H:%M:%SZ")
        logger.info(
            "ring: %s",
            firing.text,
            extra={
                "firing_id": firing.id,
                "reminder_id": firing.reminder_id,
                "owner": firing.owner,
                "due": due,
                "lateness_seconds": round(lateness, 3),
            },
        )
        return DeliveryResult.sent()
