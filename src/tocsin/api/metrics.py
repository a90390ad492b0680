"""The API's side of the metrics: every request counted by route template and status, with
its latency (`RequestMetrics`), and `GET /metrics` in the Prometheus text format.

The route label is the template the request matched (`/v1/reminders/{reminder_id}`), never
the path itself: ids in paths would make a series per reminder. Requests that match no
route are counted under `unmatched`.
"""

from __future__ import annotations

import time

from fastapi import APIRouter
from starlette.responses import Response
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tocsin.api import openapi
from tocsin.api.context import Context
from tocsin.metrics import exposition
from tocsin.metrics.instruments import http_metrics

router = APIRouter(tags=["health"])
UNMATCHED = "unmatched"


@router.get(
    "/metrics",
    summary="Metrics in the Prometheus text format",
    operation_id="metrics",
    response_class=Response,
    responses={
        200: {
            "description": "Prometheus text exposition format 0.0.4.",
            "content": {exposition.CONTENT_TYPE: {"schema": {"type": "string"}}},
        },
        **openapi.problems(notes={403: "Loopback dev mode: a `Host` that is not a loopback name."}),
    },
)
async def metrics(context: Context) -> Response:
    body = await exposition.render(context.store)
    return Response(body, media_type=exposition.CONTENT_TYPE)


class RequestMetrics:
    """Counts each HTTP request by method, route template and status, and times it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            template = _template(scope)
            method = scope["method"]
            instruments = http_metrics()
            instruments.requests.labels(method, template, str(status)).inc()
            instruments.seconds.labels(method, template).observe(time.perf_counter() - started)


def _template(scope: Scope) -> str:
    """The template of the route that answered; `unmatched` for a 404 or a request a guard
    answered before routing."""
    route: BaseRoute | None = scope.get("route")
    return getattr(route, "path", None) or UNMATCHED
