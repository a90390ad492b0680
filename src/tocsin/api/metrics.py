"""The API's side of the metrics: every request counted by route template and status, with
its latency (`count_request`), and `GET /metrics` in the Prometheus text format.

The route label is the template the request matched (`/v1/reminders/{reminder_id}`), never
the path itself: ids in paths would make a series per reminder. Requests that match no
route are counted under `unmatched`.
"""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response
from starlette.routing import BaseRoute
from starlette.types import Scope

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


def count_request(scope: Scope, status: int, seconds: float) -> None:
    """Count one answered HTTP request by method, route template and status, and its time
    (called by the access log's middleware, which already watches every request)."""
    template = _template(scope)
    method = scope["method"]
    instruments = http_metrics()
    instruments.requests.labels(method, template, str(status)).inc()
    instruments.seconds.labels(method, template).observe(seconds)


def _template(scope: Scope) -> str:
    """The template of the route that answered; `unmatched` for a 404 or a request a guard
    answered before routing."""
    route: BaseRoute | None = scope.get("route")
    return getattr(route, "path", None) or UNMATCHED
