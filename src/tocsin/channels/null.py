"""The `null` channel: counts firings and sends nothing — for benchmarks of the engine alone."""

from __future__ import annotations

from tocsin.channels.base import DeliveryResult, Destination, DestinationSender
from tocsin.domain import Firing


class NullSender(DestinationSender):
    """Every firing is "sent" at once; `count` says how many were."""

    def __init__(self) -> None:
        self.count = 0

    async def send(
        self, firing: Firing, destination: Destination, *, time_limit: float
    ) -> DeliveryResult:
        self.count += 1
        return DeliveryResult.sent()
