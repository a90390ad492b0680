"""The recorder's answer to each way a write can fail: the database away (wait, keep every
result, write it later) or a batch it refuses (write it in halves, drop only the results it
refuses alone, say so once each) — and nothing ends its task."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

import pytest

from tocsin.delivery.recorder import Recorder
from tocsin.domain import AttemptResult, Firing, FiringState, Outcome
from tocsin.errors import StoreError, StoreUnavailable
from tocsin.store.ports import DeliveryQueue

Failure = Callable[[Sequence[AttemptResult]], BaseException | None]


class Queue(DeliveryQueue):
    """Records what it is given, unless `failure` says what to raise for a batch."""

    def __init__(self, failure: Failure) -> None:
        self.failure = failure
        self.written: list[str] = []
        self.calls = 0

    async def record_attempts(self, results: Sequence[AttemptResult]) -> int:
        self.calls += 1
        error = self.failure(results)
        if error is not None:
            raise error
        self.written += [result.firing_id for result in results]
        return len(results)

    async def take_deliveries(
        self, *, sender: str, shards: range | None, now: datetime, lease: timedelta, limit: int
    ) -> list[Firing]:
        raise NotImplementedError

    async def release_deliveries(
        self, firings: Sequence[Firing], *, sender: str, now: datetime
    ) -> int:
        raise NotImplementedError

    async def settled_destinations(self, firing_id: str) -> dict[str, Outcome]:
        raise NotImplementedError


def _results(count: int) -> list[AttemptResult]:
    return [AttemptResult(f"f{n}", "w", FiringState.SENT) for n in range(count)]


def _refusing(bad: set[str], error: Callable[[], BaseException]) -> Failure:
    def failure(results: Sequence[AttemptResult]) -> BaseException | None:
        return error() if any(r.firing_id in bad for r in results) else None

    return failure


@pytest.mark.parametrize(
    "error",
    [
        lambda: StoreError("PostgreSQL: unsupported Unicode escape sequence"),
        lambda: TypeError("str is not valid UTF-8: surrogates not allowed"),
    ],
    ids=["refused", "not-encodable"],
)
async def test_a_refused_batch_is_written_but_for_the_results_refused_alone(
    error: Callable[[], BaseException], caplog: pytest.LogCaptureFixture
) -> None:
    queue = Queue(_refusing({"f17", "f600"}, error))
    recorder = Recorder(queue, batch=1000)
    for result in _results(1000):
        recorder.add(result)

    with caplog.at_level(logging.WARNING, logger="tocsin.delivery.recorder"):
        assert await recorder.flush()

    assert sorted(queue.written) == sorted(f"f{n}" for n in range(1000) if n not in (17, 600))
    assert recorder.recorded == 998
    assert recorder.dropped == 2
    assert recorder.pending == 0
    assert queue.calls < 60  # halves: a few dozen writes, not one per result
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(warnings) == 1
    assert sorted(str(getattr(r, "firing_id", "")) for r in errors) == ["f17", "f600"]


async def test_the_database_going_away_mid_split_keeps_what_is_not_written() -> None:
    away = True

    def failure(results: Sequence[AttemptResult]) -> BaseException | None:
        if away and len(queue.written) >= 2:  # f0 and f1 went in, then it went away
            return StoreUnavailable("PostgreSQL unreachable")
        return StoreError("refused") if any(r.firing_id == "f3" for r in results) else None

    queue = Queue(failure)
    recorder = Recorder(queue, batch=8)
    for result in _results(8):
        recorder.add(result)

    assert not await recorder.flush()
    assert queue.written == ["f0", "f1"]
    assert recorder.pending == 6  # f2…f7 wait for the database
    away = False
    assert await recorder.flush()
    assert sorted(queue.written) == [f"f{n}" for n in range(8) if n != 3]
    assert recorder.dropped == 1


async def test_the_recorder_keeps_running_whatever_a_write_raises() -> None:
    failures = iter([RuntimeError("a bug"), None])

    def failure(results: Sequence[AttemptResult]) -> BaseException | None:
        return next(failures, None)

    queue = Queue(failure)
    recorder = Recorder(queue, interval=0.01)
    task = asyncio.create_task(recorder.run())
    try:
        recorder.add(AttemptResult("lone", "w", FiringState.SENT))
        await asyncio.sleep(0.2)
        recorder.add(AttemptResult("next", "w", FiringState.SENT))
        for _ in range(100):
            if queue.written:
                break
            await asyncio.sleep(0.02)
        assert not task.done()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert queue.written == ["next"]
    assert recorder.dropped == 1
