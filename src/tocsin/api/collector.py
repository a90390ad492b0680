"""Keeps CPython's cyclic garbage collector from stopping the feed in the middle of a burst.

An API process holding 10,000 feed connections tracks about 1.5 million objects. When a
burst of rings comes soon after many pages connected (a restart, a deploy, the minute after
a network blip), the collector's middle generation still holds those connections' objects,
and the burst's own allocations set off a collection of it: measured, 307 ms with the event
loop stopped, in the middle of writing a 10,000-ring burst (docs/benchmarks.md, the in-app
row). Nothing a burst makes needs the cyclic collector soon — reference counting frees
almost all of it at once — so the feed pauses automatic collection while it writes one.

A pause lasts at most `pause` seconds, and the next one starts only after the collector ran
unpaused for `rest` seconds: under a steady stream of rings the collector still runs most
of the time, and memory stays bounded. The collections a pause put off run when it ends. A
collector someone else turned off (a test, an embedding program) is left alone.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable

PAUSE_SECONDS = 1.5  # a 10,000-ring burst is written in about a second
REST_SECONDS = 5.0


class CollectorPause:
    """Pauses automatic garbage collection for a burst; see the module."""

    def __init__(
        self,
        *,
        pause: float = PAUSE_SECONDS,
        rest: float = REST_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._pause = pause
        self._rest = rest
        self._clock = clock
        self._resumed_at: float | None = None  # when the last pause ended
        self._timer: asyncio.TimerHandle | None = None

    @property
    def paused(self) -> bool:
        return self._timer is not None

    def burst(self) -> None:
        """A burst begins: pause automatic collection, unless it is paused already, rested
        too little since the last pause, or was turned off by someone else."""
        if self._timer is not None or not gc.isenabled():
            return
        if self._resumed_at is not None and self._clock() - self._resumed_at < self._rest:
            return
        gc.disable()
        self._timer = asyncio.get_running_loop().call_later(self._pause, self.resume)

    def resume(self) -> None:
        """End the pause now (also at the process's stop)."""
        if self._timer is None:
            return
        self._timer.cancel()
        self._timer = None
        self._resumed_at = self._clock()
        gc.enable()
