"""A worker's small HTTP port (`tocsin worker --metrics-port`): `/metrics` for Prometheus,
`/healthz` (the process is up) and `/readyz` (it can ring: the database answers with the
current schema, and the worker holds its share of the parts) for orchestrators.

A worker has no API to carry these, and must not need one: it is what a supervisor restarts
and what Prometheus scrapes when the API is elsewhere.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import orjson
from aiohttp import web

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
        self._runner = web.AppRunner(app, access_log=None)

    async def start(self) -> None:
        await self._runner.setup()
        await web.TCPSite(self._runner, self._host, self._port).start()
        logger.info("metrics and health on http://%s:%d", self._host, self._port)

    async def stop(self) -> None:
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
