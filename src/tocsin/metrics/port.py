"""A worker's small HTTP port (`tocsin worker --metrics-port`): `/metrics` for Prometheus,
`/healthz` (the process is up) and `/readyz` (it can ring: the database answers with the
current schema, and the worker holds its share of the parts) for orchestrators.

A worker has no API to carry these, and must not need one: it is what a supervisor restarts
and what Prometheus scrapes when the API is elsewhere. Its requests' heads have the API's
limits (`tocsin.heads`); it takes no bodies, so every byte it reads is measured as a head's.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import orjson
from aiohttp import web

from tocsin.heads import HEAD_LIMITS, HeadGuard
from tocsin.metrics import exposition
from tocsin.readiness import database_problem
from tocsin.store.base import Store

logger = logging.getLogger(__name__)

Problem = Callable[[], str | None]
"""Why the process cannot work now, beyond the database (None: it can)."""


class MetricsPort:
    """Serves the three paths on `host:port` between `start` and `stop`."""

    def __init__(self, store: Store, *, host: str, port: int, problem: Problem) -> None:
        self._store = store
        self._host = host
        self._port = port
        self._problem = problem
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        # aiohttp's own limits, no stricter than the guard's: what passes it, aiohttp reads.
        self._runner = web.AppRunner(
            app,
            access_log=None,
            max_line_size=HEAD_LIMITS.line_bytes,
            max_field_size=HEAD_LIMITS.line_bytes,
            max_headers=HEAD_LIMITS.fields,
        )
        self._listening: asyncio.Server | None = None

    async def start(self) -> None:
        await self._runner.setup()
        handler = self._runner.server
        assert handler is not None  # made by setup
        # Listening here rather than through aiohttp's TCPSite puts the guard in front.
        self._listening = await asyncio.get_running_loop().create_server(
            lambda: HeadGuard(handler()), self._host, self._port, reuse_address=True
        )
        logger.info("metrics and health on http://%s:%d", self._host, self._port)

    async def stop(self) -> None:
        if self._listening is not None:
            self._listening.close()
        await self._runner.cleanup()

    async def _metrics(self, request: web.Request) -> web.Response:
        body = await exposition.render(self._store)
        return web.Response(body=body, headers={"Content-Type": exposition.CONTENT_TYPE})

    async def _healthz(self, request: web.Request) -> web.Response:
        return _json(200, {"status": "ok"})

    async def _readyz(self, request: web.Request) -> web.Response:
        problem = await database_problem(self._store) or self._problem()
        if problem is not None:
            return _json(503, {"status": "not ready", "detail": problem})
        return _json(200, {"status": "ready"})


def _json(status: int, body: dict[str, str]) -> web.Response:
    return web.Response(status=status, body=orjson.dumps(body), content_type="application/json")
