"""Records attempt results in batches: one `record_attempts` call for many firings."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from tocsin.domain import AttemptResult
from tocsin.errors import StoreError
from tocsin.store.base import Store

logger = logging.getLogger(__name__)


class Recorder:
    """Buffers results and writes them every `interval` seconds or every `batch` results,
    up to `concurrency` batches at once (a burst makes results as fast as claims, and a
    result not written keeps its firing held: it must not fall behind the claims).

    When the database is away the results wait (the firings stay `sending` under this
    worker's lease) and are written once it is back; a result whose lease ran out meanwhile
    is refused by the store only when another sender took the firing over — at least once.
    `on_written` is called after each batch written (delivery has room again).
    """

    def __init__(
        self,
        store: Store,
        *,
        batch: int = 1000,
        interval: float = 0.05,
        concurrency: int = 4,
        on_written: Callable[[], None] | None = None,
    ) -> None:
        self._store = store
        self._batch = batch
        self._interval = interval
        self._slots = asyncio.Semaphore(concurrency)
        self._buffer: list[AttemptResult] = []
        self._writing = 0  # results in batches being written now
        self._full = asyncio.Event()
        self._failed = False
        self._tasks: set[asyncio.Task[None]] = set()
        self.on_written = on_written
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
            await self._start_batches()
            backoff = min(backoff * 2 + 0.1, 2.0) if self._failed else self._interval

    async def _start_batches(self) -> None:
        """Start writing what is buffered, in batches, as write slots come free."""
        self._failed = False
        while self._buffer and not self._failed:
            await self._slots.acquire()
            batch, self._buffer = self._buffer[: self._batch], self._buffer[self._batch :]
            self._writing += len(batch)
            task = asyncio.create_task(self._write(batch))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _write(self, batch: list[AttemptResult]) -> None:
        try:
            if not await self._write_now(batch):
                self._failed = True
        finally:
            self._writing -= len(batch)
            self._slots.release()
            if self.on_written is not None:
                self.on_written()

    async def _write_now(self, batch: list[AttemptResult]) -> bool:
        try:
            self.recorded += await self._store.record_attempts(batch)
        except StoreError as error:
            self._buffer[:0] = batch
            logger.warning("recording %d attempts failed: %s", len(batch), error)
            return False
        except asyncio.CancelledError:
            self._buffer[:0] = batch  # written or not, `close` writes it (again: refused)
            raise
        return True

    async def flush(self) -> bool:
        """Write everything buffered, one batch at a time; False (keeping it) when the store
        failed."""
        while self._buffer:
            batch, self._buffer = self._buffer[: self._batch], self._buffer[self._batch :]
            if not await self._write_now(batch):
                return False
        return True

    async def close(self, grace: float) -> None:
        """Flush everything, retrying for up to `grace` seconds."""
        loop = asyncio.get_running_loop()
        give_up = loop.time() + grace
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=grace)
        for _ in range(int(grace / 0.2) + 1):
            if await self.flush() or loop.time() >= give_up:
                break
            await asyncio.sleep(0.2)
        if self._buffer:
            logger.error("%d attempt results were not recorded", len(self._buffer))
