"""Wake-ups across processes: one dedicated connection LISTENing on `tocsin_due` (a reminder
became due soon) and `tocsin_leases` (a worker joined or let parts go).

The connection is made when the first listener subscribes, pinged every few seconds, and made
again (with growing pauses) whenever it is lost, e.g. when the database restarts. Wake-ups
sent while it was down are missed: the scheduler's periodic sweep catches those reminders.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

import asyncpg

from tocsin.store import codec
from tocsin.store.base import DueListener

log = logging.getLogger(__name__)

_PING_SECONDS = 5.0
_RETRY_FIRST = 0.1
_RETRY_MAX = 5.0

T = TypeVar("T")

Connect = Callable[[], Awaitable[asyncpg.Connection]]


class Wakeups:
    """Dispatches NOTIFY payloads on `tocsin_due` to in-process listeners."""

    def __init__(self, connect: Connect) -> None:
        self._connect = connect
        self._listeners: list[DueListener] = []
        self._lease_listeners: list[Callable[[], None]] = []
        self._task: asyncio.Task[None] | None = None
        self._connection: asyncpg.Connection | None = None
        self._starting = asyncio.Lock()

    async def add(self, listener: DueListener) -> Callable[[], None]:
        """Subscribe `listener` to due wake-ups; the first subscription waits until LISTEN
        is active."""
        return await self._subscribe(self._listeners, listener)

    async def add_leases(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Subscribe `listener` to lease changes."""
        return await self._subscribe(self._lease_listeners, listener)

    async def _subscribe(self, listeners: list[T], listener: T) -> Callable[[], None]:
        async with self._starting:
            if self._task is None:
                connection = await self._listen()  # fails loudly when the database is down
                self._task = asyncio.create_task(self._supervise(connection), name="tocsin-listen")
        listeners.append(listener)

        def stop() -> None:
            if listener in listeners:
                listeners.remove(listener)

        return stop

    async def close(self) -> None:
        self._listeners.clear()
        self._lease_listeners.clear()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self._drop()

    async def _listen(self) -> asyncpg.Connection:
        connection = await self._connect()
        try:
            await connection.add_listener(codec.DUE_CHANNEL, self._on_notify)
            await connection.add_listener(codec.LEASES_CHANNEL, self._on_leases)
        except BaseException:
            connection.terminate()
            raise
        self._connection = connection
        return connection

    async def _supervise(self, connection: asyncpg.Connection) -> None:
        while True:
            await self._watch(connection)
            await self._drop()
            log.warning("lost the LISTEN connection for due wake-ups; reconnecting")
            connection = await self._reconnect()
            log.info("LISTEN connection for due wake-ups is back")

    async def _watch(self, connection: asyncpg.Connection) -> None:
        """Return once the connection is lost (closed by the server or not answering)."""
        lost = asyncio.Event()
        connection.add_termination_listener(lambda _connection: lost.set())
        while not lost.is_set() and not connection.is_closed():
            try:
                await asyncio.wait_for(lost.wait(), _PING_SECONDS)
            except TimeoutError:
                try:
                    await asyncio.wait_for(connection.execute("SELECT 1"), _PING_SECONDS)
                except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError):
                    return

    async def _reconnect(self) -> asyncpg.Connection:
        pause = _RETRY_FIRST
        while True:
            try:
                return await self._listen()
            except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError):
                await asyncio.sleep(pause)
                pause = min(pause * 2, _RETRY_MAX)

    async def _drop(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None and not connection.is_closed():
            connection.terminate()

    def _on_leases(
        self, _connection: asyncpg.Connection, _pid: int, _channel: str, _payload: str
    ) -> None:
        for listener in list(self._lease_listeners):
            try:
                listener()
            except Exception:
                log.exception("a lease listener failed")

    def _on_notify(
        self, _connection: asyncpg.Connection, _pid: int, _channel: str, payload: str
    ) -> None:
        try:
            shard, due_at = codec.parse_wake_payload(payload)
        except ValueError:
            log.warning("ignored a malformed due wake-up", extra={"payload": payload})
            return
        for listener in list(self._listeners):
            try:
                listener(shard, due_at)
            except Exception:
                log.exception("a due listener failed", extra={"shard": shard})
