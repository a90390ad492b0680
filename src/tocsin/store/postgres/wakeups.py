"""Wake-ups across processes: one dedicated connection LISTENing on `tocsin_due` (a reminder
became due soon), `tocsin_leases` (a worker joined or let parts go), `tocsin_feed` (an
in-app ring waits for its owner's pages) and `tocsin_revocations` (an owner's tokens were
revoked) — each channel only once this process listens to it, so an API process hears the
feed and revocations alone and a worker neither.

The connection is made when the first listener subscribes, pinged every few seconds, and made
again (with growing pauses) whenever it is lost, e.g. when the database restarts, or when its
server no longer takes writes. NOTIFY is heard only on the server it was sent on, the
primary: a connection left on a demoted or fenced one (pg_auto_failover's read-only primary)
still answers a ping, but hears nothing, so the ping asks whether the server takes writes
and a connection is only kept on one that does. Wake-ups
sent while it was down are missed: the scheduler's periodic sweep catches those reminders,
and feed listeners are told (`on_gap`) to re-read what their pages wait for.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

import asyncpg

from tocsin.errors import StoreError
from tocsin.store import codec
from tocsin.store.base import DueListener, FeedListener
from tocsin.store.postgres import queries as q

log = logging.getLogger(__name__)

_PING_SECONDS = 5.0
_RETRY_FIRST = 0.1
_RETRY_MAX = 5.0

T = TypeVar("T")
# StoreError: connecting through the URL's hosts found none that takes writes.
_LOST = (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError, StoreError)

Connect = Callable[[], Awaitable[asyncpg.Connection]]


class Wakeups:
    """Dispatches NOTIFY payloads on `tocsin_due` to in-process listeners."""

    def __init__(self, connect: Connect) -> None:
        self._connect = connect
        self._listeners: list[DueListener] = []
        self._lease_listeners: list[Callable[[], None]] = []
        self._feed_listeners: list[tuple[FeedListener, Callable[[], None]]] = []
        self._revocation_listeners: list[Callable[[str], None]] = []
        self._handlers = {
            codec.DUE_CHANNEL: self._on_notify,
            codec.LEASES_CHANNEL: self._on_leases,
            codec.FEED_CHANNEL: self._on_feed,
            codec.REVOCATIONS_CHANNEL: self._on_revoked,
        }
        self._wanted: set[str] = set()  # the channels LISTENed to
        self._task: asyncio.Task[None] | None = None
        self._connection: asyncpg.Connection | None = None
        self._starting = asyncio.Lock()
        # One call at a time on the LISTEN connection: asyncpg refuses a second one while the
        # first is in flight, so the supervisor's ping and a late LISTEN take turns.
        self._using = asyncio.Lock()

    async def add(self, listener: DueListener) -> Callable[[], None]:
        """Subscribe `listener` to due wake-ups; the first subscription waits until LISTEN
        is active."""
        return await self._subscribe(codec.DUE_CHANNEL, self._listeners, listener)

    async def add_leases(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Subscribe `listener` to lease changes."""
        return await self._subscribe(codec.LEASES_CHANNEL, self._lease_listeners, listener)

    async def add_feed(
        self, listener: FeedListener, on_gap: Callable[[], None]
    ) -> Callable[[], None]:
        """Subscribe `listener` to in-app rings; `on_gap` is called after a reconnection."""
        return await self._subscribe(codec.FEED_CHANNEL, self._feed_listeners, (listener, on_gap))

    async def add_revocations(self, listener: Callable[[str], None]) -> Callable[[], None]:
        """Subscribe `listener` to owners whose tokens were revoked."""
        return await self._subscribe(
            codec.REVOCATIONS_CHANNEL, self._revocation_listeners, listener
        )

    async def _subscribe(self, channel: str, listeners: list[T], listener: T) -> Callable[[], None]:
        async with self._starting:
            new = channel not in self._wanted
            self._wanted.add(channel)
            if self._task is None:
                connection = await self._listen()  # fails loudly when the database is down
                self._task = asyncio.create_task(self._supervise(connection), name="tocsin-listen")
            elif new and self._connection is not None:
                await self._listen_too(self._connection, channel)
        listeners.append(listener)

        def stop() -> None:
            if listener in listeners:
                listeners.remove(listener)

        return stop

    async def _listen_too(self, connection: asyncpg.Connection, channel: str) -> None:
        """LISTEN to one more channel on the live connection. If that fails, the connection
        is dropped: the supervisor makes it again, LISTENing to every wanted channel, so a
        channel is never left unheard on a connection that otherwise works."""
        try:
            async with self._using:
                await connection.add_listener(channel, self._handlers[channel])
        except _LOST:
            log.warning("could not LISTEN on %s; making the connection again", channel)
            connection.terminate()

    async def close(self) -> None:
        self._listeners.clear()
        self._lease_listeners.clear()
        self._feed_listeners.clear()
        self._revocation_listeners.clear()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self._drop()

    async def _listen(self) -> asyncpg.Connection:
        connection = await self._connect()
        try:
            if await connection.fetchval(q.READ_ONLY):
                raise asyncpg.ReadOnlySQLTransactionError(
                    "the server takes no writes (a standby, or read-only): it hears no NOTIFY"
                )
            for channel in sorted(self._wanted):
                await connection.add_listener(channel, self._handlers[channel])
        except BaseException:
            connection.terminate()
            raise
        self._connection = connection
        return connection

    async def _supervise(self, connection: asyncpg.Connection) -> None:
        while True:
            why = await self._watch(connection)
            await self._drop()
            log.warning("lost the LISTEN connection for due wake-ups (%s); reconnecting", why)
            connection = await self._reconnect()
            log.info("LISTEN connection for due wake-ups is back")
            for _, on_gap in list(self._feed_listeners):
                on_gap()

    async def _watch(self, connection: asyncpg.Connection) -> str:
        """Return once the connection is lost (closed by the server, not answering, or on a
        server that no longer takes writes), saying which."""
        lost = asyncio.Event()
        connection.add_termination_listener(lambda _connection: lost.set())
        while not lost.is_set() and not connection.is_closed():
            try:
                await asyncio.wait_for(lost.wait(), _PING_SECONDS)
            except TimeoutError:
                try:
                    async with self._using:
                        read_only = await asyncio.wait_for(
                            connection.fetchval(q.READ_ONLY), _PING_SECONDS
                        )
                except _LOST as error:
                    return f"the ping failed: {error!r}"
                if read_only:
                    return "its server takes no writes now: not the primary"
        return "closed"

    async def _reconnect(self) -> asyncpg.Connection:
        pause = _RETRY_FIRST
        while True:
            try:
                return await self._listen()
            except _LOST:
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

    def _on_feed(
        self, _connection: asyncpg.Connection, _pid: int, _channel: str, payload: str
    ) -> None:
        rings, bad = codec.parse_feed_payload(payload)
        if bad:
            log.warning("ignored a malformed feed announcement", extra={"payload": bad[0]})
        for listener, _ in list(self._feed_listeners):
            for owner, firing_id in rings:
                try:
                    listener(owner, firing_id)
                except Exception:
                    log.exception("a feed listener failed", extra={"owner": owner})

    def _on_revoked(
        self, _connection: asyncpg.Connection, _pid: int, _channel: str, owner: str
    ) -> None:
        for listener in list(self._revocation_listeners):
            try:
                listener(owner)
            except Exception:
                log.exception("a revocation listener failed", extra={"owner": owner})
