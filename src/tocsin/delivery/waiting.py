"""Sleeping on the injected clock until an instant, or until something wakes the sleeper."""

from __future__ import annotations

import asyncio
from datetime import datetime

from tocsin.clock import Clock


async def sleep_until(clock: Clock, instant: datetime, wake: asyncio.Event) -> None:
    """Return at `instant` (by `clock`) or as soon as `wake` is set, whichever comes first.
    The caller clears `wake` before looking at what to do next."""
    if wake.is_set():
        return
    sleeper = asyncio.ensure_future(clock.sleep_until(instant))
    waker = asyncio.ensure_future(wake.wait())
    try:
        await asyncio.wait({sleeper, waker}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        sleeper.cancel()
        waker.cancel()
