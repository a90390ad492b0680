"""Server-sent events on the wire (the WHATWG HTML "server-sent events" format), and the
response that writes them.

Hand-written rather than sse-starlette: the format is four kinds of line, and the feed needs
two things a generic streaming response does not give. It must know that an event was
written to a connection still open before it marks the firing `sent` (`EventWriter.write`).
And it writes a burst of events, one to each of thousands of connections, from one task and
without a task switch per connection (`EventWriter.write_now`). (sse-starlette also installs
its own shutdown hook into uvicorn's signal handling, which `tocsin serve` keeps to itself.)
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import Any

from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MEDIA_TYPE = "text/event-stream"
HEADERS = {
    "Cache-Control": "no-cache, no-transform",  # no proxy may buffer or rewrite the stream
    "X-Accel-Buffering": "no",  # nginx: pass each event on at once
}
SERVER_SEND = "tocsin.server_send"  # the scope key `ServerSend` keeps the server's `send` under


def event(event_id: str, data: bytes) -> bytes:
    """One event: `id` (a client sends the last one back as `Last-Event-ID`) and one line
    of data (JSON: it has no newline)."""
    return b"id: %s\ndata: %s\n\n" % (event_id.encode(), data)


def comment(text: str) -> bytes:
    """A comment line: ignored by clients, but traffic that keeps proxies from closing."""
    return f": {text}\n\n".encode()


def retry(milliseconds: int) -> bytes:
    """How long a client waits before it reconnects after the connection is lost."""
    return f"retry: {milliseconds}\n\n".encode()


class ServerSend:
    """Keeps the server's own `send` in the scope (under `SERVER_SEND`), for an event stream's
    many small writes: each passes the middlewares' `send` wrappers otherwise, a coroutine
    apiece, which for a burst over ten thousand connections was a fifth of the API process's
    work (docs/benchmarks.md, the in-app row). The stream's start and end still go through
    them, so a middleware sees the status and the end of the response; one that rewrites
    bodies (compression) would not see the events, and must not be put inside this one."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope[SERVER_SEND] = send
        await self.app(scope, receive, send)


class EventWriter:
    """Writes events to one open `text/event-stream` response."""

    def __init__(self, send: Send, gone: asyncio.Event) -> None:
        self._send = send
        self._gone = gone

    @property
    def gone(self) -> bool:
        """The client went away (as far as this process has seen)."""
        return self._gone.is_set()

    def write_now(self, chunk: bytes) -> Awaitable[None] | None:
        """Writes `chunk` at once, without a task switch: None when it was written; when the
        connection cannot take it now (its buffer is full: the client reads slowly), what
        finishes the write, to be awaited before anything else is written to it.

        The server's `send` is a coroutine that suspends only to wait for the connection to
        drain, so it is run here to its first suspension, and the rest handed back."""
        sending = self._send({"type": "http.response.body", "body": chunk, "more_body": True})
        if not isinstance(sending, Coroutine):
            return sending
        try:
            waiting_on = sending.send(None)
        except StopIteration:
            return None
        return _Rest(sending, waiting_on)

    async def write(self, chunk: bytes) -> bool:
        """Writes `chunk`; True when the connection is still open after it (`finish`)."""
        return await self.finish(self.write_now(chunk))

    async def finish(self, rest: Awaitable[None] | None) -> bool:
        """Finishes a write `write_now` began (`rest`, its answer); True when the connection
        is still open after it: a disconnect the server has already seen was noticed (the
        response's watcher is given one turn of the event loop) before this returns."""
        if rest is not None:
            await rest
        await asyncio.sleep(0)
        return not self._gone.is_set()


class _Rest:
    """The rest of a coroutine started elsewhere (`EventWriter.write_now`), to be awaited
    once: resumes it each time what it waits on is done, as a task would."""

    def __init__(self, coroutine: Coroutine[Any, Any, None], waiting_on: Any) -> None:
        self._coroutine = coroutine
        self._waiting_on = waiting_on

    def __await__(self) -> Generator[Any, Any, None]:
        coroutine, waiting_on = self._coroutine, self._waiting_on
        while True:
            try:
                sent = yield waiting_on
            except BaseException as error:  # cancelled, or thrown in: the coroutine's to handle
                try:
                    waiting_on = coroutine.throw(error)
                except StopIteration:
                    return
                continue
            try:
                waiting_on = coroutine.send(sent)
            except StopIteration:
                return


Body = Callable[[EventWriter], Awaitable[None]]


class EventStream(Response):
    """A `text/event-stream` response written by `body` through an `EventWriter`, until it
    returns or the client goes away.

    uvicorn's `send` returns without error once the client has gone; the disconnect is
    noticed by a task reading `receive`, which calls `on_disconnect` (so `body`, which may be
    waiting for its next event, can end) and sets the writer's `gone`.
    """

    media_type = MEDIA_TYPE

    def __init__(self, body: Body, *, on_disconnect: Callable[[], None]) -> None:
        # Not `Response.__init__`: a response without a body would get `content-length: 0`.
        self.status_code = 200
        self.background = None
        self.init_headers(HEADERS)
        self._body = body
        self._on_disconnect = on_disconnect

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        gone = asyncio.Event()
        watcher = asyncio.create_task(self._watch(receive, gone))
        try:
            await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
            await self._body(EventWriter(scope.get(SERVER_SEND, send), gone))
            if not gone.is_set():
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            pass  # the connection broke under a write: the same as a disconnect
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher

    async def _watch(self, receive: Receive, gone: asyncio.Event) -> None:
        message: Message = await receive()
        while message["type"] != "http.disconnect":
            message = await receive()
        gone.set()
        self._on_disconnect()
