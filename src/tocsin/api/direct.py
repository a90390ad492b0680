"""Routes whose endpoint takes the `Request` and returns its `Response` itself.

FastAPI still documents such a route (its `openapi_extra`, response model and problems), but
at request time runs none of its parameter machinery: no dependencies solved, no body or
header parameters read, no answer validated. The create routes, the busiest, read the caller
and the body themselves (`tocsin.api.body.validated`), so that machinery only spent time:
a sixth of a single create's API CPU (336 → 282 µs in process, docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response

Endpoint = Callable[[Request], Coroutine[Any, Any, Response]]


class DirectRoute(APIRoute):
    """An `APIRoute` whose endpoint is called with the request, and answers as it returns."""

    def get_route_handler(self) -> Endpoint:
        endpoint: Endpoint = self.endpoint
        return endpoint
