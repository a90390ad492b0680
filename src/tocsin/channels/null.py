"""The `null` channel: counts firings and sends nothing — for benchmarks of the engine alone."""

from __future__ import annotations

from tocsin.channels.base import DeliveryResult, Sender
from tocsin.domain import Firing


class NullSender(Sender[None]):
    """Every firing is "sent" at once; `count` says how many were."""

    def __init__(self) -> None:
        self.count = 0

    async def target(self, firing: Firing) -> None:
        return None

    async def send(self, firing: Firing, target: None, *, time_limit: float) -> DeliveryResult:
        self.count += 1
        return DeliveryResult.sent()
