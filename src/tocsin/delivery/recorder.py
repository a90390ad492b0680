"""Records attempt results in batches: one `record_attempts` call for many firings."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from tocsin.domain import AttemptResult
from tocsin.errors import StoreError
from tocsin.store.ports import DeliveryQueue

logger = logging.getLogger(__name__)


class Recorder:
    """Buffers results and writes them every `interval` seconds or every `batch` results.

    When the database is away the results wait (their rings stay held by this worker: a
    firing `sending`, or a claim's ring not written yet) and are written once it is back; a
    result whose hold ran out and whose ring another sender took meanwhile is refused by the
    store, and that sender sends it — at least once.
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
            backoff = self._interval if await self.flush() else min(backoff * 2 + 0.1, 2.0)

    async def flush(self) -> bool:
        """Write what is buffered; False (keeping it) when the store failed."""
        while self._buffer:
            batch, self._buffer = self._buffer[: self._batch], self._buffer[self._batch :]
            self._writing = len(batch)
            try:
                self.recorded += await self._store.record_attempts(batch)
            except StoreError as error:
                self._buffer[:0] = batch
                logger.warning("recording %d attempts failed: %s", len(batch), error)
                return False
            except asyncio.CancelledError:
                self._buffer[:0] = batch  # written or not, `close` writes it (again: refused)
                raise
            finally:
                self._writing = 0
                if self.on_written is not None:
                    self.on_written()
        return True

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
