"""A server-sent events client for the tests: reads a `text/event-stream` response as the
WHATWG parsing rules say (fields per line, an event per blank line, comments, `retry`)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx


@dataclass
class Event:
    """One dispatched event, or (with `comment` set and no data) a comment line."""

    id: str | None = None
    data: str = ""
    comment: str | None = None

    def json(self) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(self.data)
        return value


@dataclass
class FeedClient:
    """An open feed connection: every event and comment read so far, in order."""

    response: httpx.Response
    events: list[Event] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)
    retry: int | None = None
    last_event_id: str | None = None
    _lines: AsyncIterator[str] | None = None
    _taken: int = 0  # events handed out by `next_event`

    async def next_event(self, within: float) -> Event:
        """The next event with data not handed out yet (comments are collected on the way)."""
        if self._taken == len(self.events):
            await asyncio.wait_for(self._next_event(), within)
        self._taken += 1
        return self.events[self._taken - 1]

    async def next_comment(self, within: float) -> str:
        seen = len(self.comments)

        async def read() -> str:
            while len(self.comments) == seen:
                await self._block()
            return self.comments[seen]

        return await asyncio.wait_for(read(), within)

    async def _next_event(self) -> Event:
        while True:
            block = await self._block()
            if block is not None:
                return block

    async def _block(self) -> Event | None:
        """Read up to a blank line; the event it dispatches, if any."""
        if self._lines is None:
            self._lines = self.response.aiter_lines()
        event, data = Event(), []
        async for line in self._lines:
            if line == "":
                break
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "":
                self.comments.append(value)
            elif name == "id":
                event.id = value
            elif name == "data":
                data.append(value)
            elif name == "retry" and value.isdigit():
                self.retry = int(value)
        else:
            raise EOFError("the stream ended")
        if not data:
            return None
        event.data = "\n".join(data)
        if event.id is not None:
            self.last_event_id = event.id
        self.events.append(event)
        return event


@asynccontextmanager
async def feed(
    client: httpx.AsyncClient,
    owner: str,
    *,
    token: str | None = None,
    ticket: str | None = None,
    last_event_id: str | None = None,
) -> AsyncIterator[FeedClient]:
    """`GET /v1/owners/{owner}/feed` held open until the block ends (with a feed `ticket`
    in the query, as a page's `EventSource` opens it)."""
    headers = {"Accept": "text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if last_event_id is not None:
        headers["Last-Event-ID"] = last_event_id
    timeout = httpx.Timeout(10, read=None)
    params = {} if ticket is None else {"ticket": ticket}
    async with client.stream(
        "GET", f"/v1/owners/{owner}/feed", headers=headers, params=params, timeout=timeout
    ) as response:
        yield FeedClient(response)
