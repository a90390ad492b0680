"""Server-sent events on the wire (the WHATWG HTML "server-sent events" format), and the
response that writes them.

Hand-written rather than sse-starlette: the format is four kinds of line, and the feed needs
one thing a generic streaming response does not give — to know that an event was written to
a connection still open before it marks the firing `sent`. `EventStream` resumes its chunks'
iterator only then. (sse-starlette also installs its own shutdown hook into uvicorn's signal
handling, which `tocsin serve` keeps to itself.)
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

MEDIA_TYPE = "text/event-stream"
HEADERS = {
    "Cache-Control": "no-cache, no-transform",  # no proxy may buffer or rewrite the stream
    "X-Accel-Buffering": "no",  # nginx: pass each event on at once
}


def event(event_id: str, data: str) -> bytes:
    """One event: `id` (a client sends the last one back as `Last-Event-ID`) and one line
    of data (JSON: it has no newline)."""
    return f"id: {event_id}\ndata: {data}\n\n".encode()


def comment(text: str) -> bytes:
    """A comment line: ignored by clients, but traffic that keeps proxies from closing."""
    return f": {text}\n\n".encode()


def retry(milliseconds: int) -> bytes:
    """How long a client waits before it reconnects after the connection is lost."""
    return f"retry: {milliseconds}\n\n".encode()


class EventStream(StreamingResponse):
    """A `text/event-stream` response whose chunks' iterator resumes after a chunk only once
    it was written to a connection that is still open: code after a `yield` may count the
    chunk as delivered (as far as a server can know: written to the socket).

    uvicorn's `send` returns without error once the client has gone; the disconnect is
    noticed by a task reading `receive`, which calls `on_disconnect` (so the iterator, which
    may be waiting for its next event, ends) and is given one turn of the event loop after
    each write to say so before the iterator resumes.
    """

    media_type = MEDIA_TYPE

    def __init__(self, chunks: AsyncIterator[bytes], *, on_disconnect: Callable[[], None]):
        super().__init__(chunks, media_type=MEDIA_TYPE, headers=HEADERS)
        self._chunks = chunks
        self._on_disconnect = on_disconnect

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        gone = asyncio.Event()
        watcher = asyncio.create_task(self._watch(receive, gone))
        try:
            await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
            if await self._write(send, gone):
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            pass  # the connection broke under a write: the same as a disconnect
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
            aclose = getattr(self._chunks, "aclose", None)
            if aclose is not None:
                await aclose()

    async def _write(self, send: Send, gone: asyncio.Event) -> bool:
        """Write every chunk; False when the client went away first."""
        chunks = self._chunks
        while True:
            try:
                chunk = await anext(chunks)
            except StopAsyncIteration:
                return not gone.is_set()
            if gone.is_set():
                return False
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await asyncio.sleep(0)  # the watcher's turn: a disconnect already seen is set now
            if gone.is_set():
                return False

    async def _watch(self, receive: Receive, gone: asyncio.Event) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        gone.set()
        self._on_disconnect()
