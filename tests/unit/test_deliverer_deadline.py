"""A send that waited for its provider's slot past the firing's deadline is not made: nothing
arrives after a ring's deadline, however long its turn took."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import cast

from tests.integration.channels.firing_factory import DUE, firing
from tocsin.channels import Channels, DeliveryResult, Destination, DestinationSender
from tocsin.clock import FakeClock
from tocsin.delivery.attempt import DEADLINE_IN_LINE, Deliverer
from tocsin.delivery.destinations import Destinations
from tocsin.delivery.isolation import Isolation
from tocsin.delivery.retry import RetryPolicy
from tocsin.domain import Channel, Firing, FiringState
from tocsin.store import Store


class Held(DestinationSender):
    """Answers `sent` to each send once `go` is set; keeps what it was given."""

    def __init__(self) -> None:
        self.go = asyncio.Event()
        self.sent: list[str] = []

    async def send(
        self, firing: Firing, destination: Destination, *, time_limit: float
    ) -> DeliveryResult:
        self.sent.append(firing.id)
        await self.go.wait()
        return DeliveryResult.sent()


async def test_a_send_whose_deadline_came_while_it_waited_for_a_slot_is_not_made() -> None:
    clock = FakeClock(DUE)
    held = Held()
    # No store is read: the null destinations need none, and a first try settles nothing.
    destinations = Destinations(cast(Store, None), null=True)
    deliverer = Deliverer(
        Channels({Channel.WEBHOOK: held}),
        destinations,
        RetryPolicy(max_attempts=5),
        clock,
        sender="worker-1",
        isolation=Isolation(concurrency=1),  # one send to the provider at a time
    )
    first = firing(channel=Channel.WEBHOOK, owner="ada")
    second = firing(channel=Channel.WEBHOOK, owner="bob", freshness=timedelta(seconds=5))
    sending = asyncio.create_task(deliverer.deliver(first))
    await asyncio.sleep(0)
    waiting = asyncio.create_task(deliverer.deliver(second))  # 5 s left: it waits its turn
    await asyncio.sleep(0)
    clock.advance(timedelta(seconds=6))  # its deadline passes while the first is out
    held.go.set()
    done, result = await sending, await waiting

    assert done is not None  # both held well within their hold
    assert result is not None
    assert done.state is FiringState.SENT
    assert held.sent == [first.id], "the late one never went out"
    assert result.state is FiringState.QUEUED  # pickup finds it past its deadline: expired
    assert result.attempt is not None
    assert result.attempt.error == DEADLINE_IN_LINE
