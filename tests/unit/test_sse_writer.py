"""`sse.EventWriter`: a write runs the server's `send` at once when the connection takes it,
and hands back the rest when the connection must drain first (a page that reads slowly)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tocsin.api.sse import EventWriter


class Connection:
    """A server's `send` with flow control as uvicorn's: while paused, a write waits for the
    connection to drain before it writes."""

    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.drained: asyncio.Future[None] | None = None
        self.left_waiting = 0  # writes whose wait ended by an exception

    def pause(self) -> None:
        self.drained = asyncio.get_running_loop().create_future()

    def resume(self) -> None:
        assert self.drained is not None
        self.drained.set_result(None)
        self.drained = None

    async def send(self, message: dict[str, Any]) -> None:
        if self.drained is not None:
            try:
                await self.drained
            except BaseException:
                self.left_waiting += 1
                raise
        self.written.append(message["body"])


async def test_a_write_the_connection_takes_is_done_at_once() -> None:
    connection = Connection()
    writer = EventWriter(connection.send, asyncio.Event())  # type: ignore[arg-type]

    assert writer.write_now(b"one") is None
    assert connection.written == [b"one"]  # before any other task ran


async def test_a_write_that_must_wait_hands_back_its_rest() -> None:
    connection = Connection()
    finishing = await _finishing_a_paused_write(connection)
    assert connection.written == []
    assert not finishing.done()

    connection.resume()
    await asyncio.wait_for(finishing, 1)
    assert connection.written == [b"one"]


async def test_cancelling_the_rest_cancels_the_write() -> None:
    connection = Connection()
    finishing = await _finishing_a_paused_write(connection)

    finishing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await finishing
    assert connection.left_waiting == 1
    assert connection.written == []


async def test_write_says_whether_the_connection_is_still_open() -> None:
    connection = Connection()
    gone = asyncio.Event()
    writer = EventWriter(connection.send, gone)  # type: ignore[arg-type]
    assert await writer.write(b"one") is True

    # The client went away; the watcher notices it in the turn the write gives it.
    asyncio.get_running_loop().call_soon(gone.set)
    assert await writer.write(b"two") is False
    assert writer.gone


async def test_write_waits_for_a_paused_connection() -> None:
    connection = Connection()
    writer = EventWriter(connection.send, asyncio.Event())  # type: ignore[arg-type]
    connection.pause()
    asyncio.get_running_loop().call_later(0.02, connection.resume)

    assert await asyncio.wait_for(writer.write(b"one"), 1) is True
    assert connection.written == [b"one"]


async def _finishing_a_paused_write(connection: Connection) -> asyncio.Future[None]:
    """A write begun on the paused connection, its rest awaited in a task of its own that
    has had time to start waiting."""
    writer = EventWriter(connection.send, asyncio.Event())  # type: ignore[arg-type]
    connection.pause()
    rest = writer.write_now(b"one")
    assert rest is not None
    finishing = asyncio.ensure_future(_awaited(rest))
    await asyncio.sleep(0.01)
    return finishing


async def _awaited(rest: Any) -> None:
    await rest
