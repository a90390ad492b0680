"""Records attempt results in batches: one `record_attempts` call for many firings."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from tocsin.domain import AttemptResult
from tocsin.errors import StoreError, StoreUnavailable
from tocsin.store.ports import DeliveryQueue

logger = logging.getLogger(__name__)


class Recorder:
    """Buffers results and writes them every `interval` seconds or every `batch` results.

    When the database is away (`StoreUnavailable`) the results wait (their rings stay held by
    this worker: a firing `sending`, or a claim's ring not written yet) and are written once
    it is back; a result whose hold ran out and whose ring another sender took meanwhile is
    refused by the store, and that sender sends it — at least once.

    A batch that fails for any other reason holds something the database will not take (a
    value it cannot store, or one no encoder writes): trying it again as it is would fail
    the same way for ever, and nothing after it would be written. It is written in halves
    instead, down to single results; a result that fails alone is dropped with one error
    line, and its ring is left to its hold, as a result never written is: when the hold
    runs out, another sender takes it over and sends it again under the same identity.
    """

    def __init__(
        self,
        store: DeliveryQueue,
        *,
        batch: int = 1000,
        interval: float = 0.05,
        on_written: Callable[[], None] | None = None,
    ) -> None:
        self._store = store
        self._batch = batch
        self._interval = interval
        self._buffer: list[AttemptResult] = []
        self._writing = 0  # results in the batch being written now
        self._full = asyncio.Event()
        self.on_written = on_written  # called after each batch: delivery has room again
        self.recorded = 0
        self.dropped = 0  # results the database refused, each alone

    def add(self, result: AttemptResult) -> None:
        self._buffer.append(result)
        if len(self._buffer) >= self._batch:
            self._full.set()

    @property
    def pending(self) -> int:
        """Results not written yet (buffered or being written)."""
        return len(self._buffer) + self._writing

    async def run(self) -> None:
        """Flush until cancelled."""
        backoff = self._interval
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._full.wait(), backoff)
            self._full.clear()
            try:
                written = await self.flush()
            except Exception:
                # Not expected (`flush` sorts every failure of a write): whatever it is must
                # not end recording; what was not written is back in the buffer.
                logger.exception("recording attempt results failed")
                written = False
            backoff = self._interval if written else min(backoff * 2 + 0.1, 2.0)

    async def flush(self) -> bool:
        """Write what is buffered; False (keeping what is left) when the database is away."""
        while self._buffer:
            batch, self._buffer = self._buffer[: self._batch], self._buffer[self._batch :]
            self._writing = len(batch)
            try:
                await self._write(batch)
            except StoreUnavailable as error:
                logger.warning("recording %d attempts failed: %s", len(batch), error)
                return False
            finally:
                self._writing = 0
                if self.on_written is not None:
                    self.on_written()
        return True

    async def _write(self, batch: list[AttemptResult]) -> None:
        """Write `batch`, in halves when the store refuses it whole (see the class). Raises
        `StoreUnavailable` (or a cancel) with what is not written yet back in the buffer."""
        parts = [batch]  # a stack: the next part to write is the last
        try:
            while parts:
                try:
                    self.recorded += await self._store.record_attempts(parts[-1])
                except StoreUnavailable:
                    raise
                except Exception as error:  # a StoreError, or one that escaped the store
                    part = parts.pop()
                    self._refused(part, error, parts, whole=part is batch)
                else:
                    parts.pop()
        except BaseException:
            self._buffer[:0] = [result for part in reversed(parts) for result in part]
            raise

    def _refused(
        self,
        part: list[AttemptResult],
        error: Exception,
        parts: list[list[AttemptResult]],
        *,
        whole: bool,
    ) -> None:
        """`part` failed to be written: its halves go on the stack, or it is dropped when it
        is one result."""
        if len(part) > 1:
            if whole:  # said once, whatever the halves come to
                logger.warning(
                    "recording %d attempts failed (%s): writing them in smaller batches, "
                    "to record all but what the database refuses",
                    len(part),
                    error,
                )
            half = len(part) // 2
            parts += [part[half:], part[:half]]
            return
        [result] = part
        self.dropped += 1
        logger.error(
            "attempt result for firing %s dropped: the database refuses it (%s); the firing "
            "is left to its hold, then taken over and sent again",
            result.firing_id,
            error,
            extra={"firing_id": result.firing_id, "state": result.state.value},
            exc_info=not isinstance(error, StoreError),  # a bug's traceback, not the driver's
        )

    async def close(self, grace: float) -> None:
        """Flush everything, retrying for up to `grace` seconds."""
        loop = asyncio.get_running_loop()
        give_up = loop.time() + grace
        for _ in range(int(grace / 0.2) + 1):
            if await self.flush() or loop.time() >= give_up:
                break
            await asyncio.sleep(0.2)
        if self._buffer:
            logger.error("%d attempt results were not recorded", len(self._buffer))
