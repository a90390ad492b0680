"""Notification services on loopback for the Apprise channel's tests: Apprise's `json://`
endpoint (`POST /json/<name>`, its JSON payload) and an ntfy server (`POST /` with a JSON
publish, as ntfy's own API takes it), recording what arrives and answering what the test
says, after an optional delay."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.support.peers.loopback import serving


@dataclass(frozen=True)
class Notification:
    """One notification as the service received it."""

    service: str  # "json" or "ntfy"
    path: str
    headers: Mapping[str, str]
    body: Mapping[str, Any]


@dataclass
class NotificationServices:
    """The services. `answer` sets how a path is answered: a status and a delay."""

    base: str = ""
    received: list[Notification] = field(default_factory=list)
    in_flight: int = 0
    most_in_flight: int = 0
    _answers: dict[str, tuple[int, float]] = field(default_factory=dict)

    @property
    def host(self) -> str:
        """`127.0.0.1:PORT`, for Apprise URLs."""
        return self.base.removeprefix("http://")

    def answer(self, path: str, status: int, *, delay: float = 0.0) -> None:
        self._answers[path] = (status, delay)

    async def _json(self, request: web.Request) -> web.Response:
        return await self._receive("json", request)

    async def _ntfy(self, request: web.Request) -> web.Response:
        return await self._receive("ntfy", request)

    async def _receive(self, service: str, request: web.Request) -> web.Response:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            body = json.loads(await request.read())
            path = request.path if service == "json" else f"/{body.get('topic')}"
            self.received.append(
                Notification(
                    service=service,
                    path=path,
                    headers={k.lower(): v for k, v in request.headers.items()},
                    body=body,
                )
            )
            status, delay = self._answers.get(path, (200, 0.0))
            await asyncio.sleep(delay)
            return web.json_response({"id": f"msg{len(self.received)}"}, status=status)
        finally:
            self.in_flight -= 1


@asynccontextmanager
async def notification_services() -> AsyncIterator[NotificationServices]:
    """The services on loopback until the block ends."""
    services = NotificationServices()
    app = web.Application()
    app.router.add_post("/json/{name}", services._json)
    app.router.add_post("/", services._ntfy)
    async with serving(app) as base:
        services.base = base
        yield services
