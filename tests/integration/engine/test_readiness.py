"""A worker says it is ready (`Engine.holding_problem`, behind its `/readyz`) only while it
holds its share of the parts, or stands by beside more workers than parts; and its metrics
say how many parts each worker holds."""

from __future__ import annotations

from tests.integration.engine.support import running, settings
from tocsin.channels import build_channels
from tocsin.clock import SystemClock
from tocsin.metrics.instruments import ENGINE
from tocsin.scheduler import Engine
from tocsin.store import Store

clock = SystemClock()


async def test_a_worker_is_ready_while_it_holds_parts_or_stands_by(store: Store) -> None:
    two_parts = settings(parts=2)
    async with running(store, two_parts, clock, worker_id="w1") as first:
        assert first.holding_problem() is None
        assert ENGINE.held["w1"] == 2
        await first.leases.renew()
        async with (
            running(store, two_parts, clock, worker_id="w2") as second,
            running(store, two_parts, clock, worker_id="w3") as third,
        ):
            for engine in (first, second, third, first, second, third):
                await engine.leases.renew()  # three workers share two parts out
            holding = {e.worker_id: len(e.parts) for e in (first, second, third)}
            problems = [e.holding_problem() for e in (first, second, third)]
    stopped = "w1" in ENGINE.held

    assert sorted(holding.values()) == [0, 1, 1]
    assert problems == [None, None, None], "the one without a part stands by"
    assert not stopped, "a stopped worker's gauge is gone"


async def test_a_worker_that_renewed_no_lease_is_not_ready(store: Store) -> None:
    config = settings(parts=2)
    engine = Engine(  # not started: no lease renewed yet, as when the database is away
        store, config, clock, worker_id="w1", channels=build_channels(config, clock)
    )

    problem = engine.holding_problem()

    assert problem is not None
    assert "holds no part" in problem
