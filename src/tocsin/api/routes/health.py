"""Liveness and readiness, for load balancers and orchestrators (no auth)."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter
from starlette.responses import Response

from tocsin.api import openapi
from tocsin.api.context import Context
from tocsin.api.problems import unavailable
from tocsin.api.render import JSON
from tocsin.errors import StoreError

router = APIRouter(tags=["health"])
READY_TIMEOUT_SECONDS = 2.0


# In loopback dev mode every request passes `tocsin.api.loopback.LoopbackGuard`: a `Host`
# that is not a loopback name is a 403 here too.
_DEV_HOST = {403: "Loopback dev mode: a `Host` that is not a loopback name."}


@router.get(
    "/healthz",
    summary="The process is alive",
    operation_id="health",
    responses=openapi.problems(notes=_DEV_HOST),
)
async def healthz() -> Response:
    return JSON({"status": "ok"})


@router.get(
    "/readyz",
    summary="The database answers",
    operation_id="ready",
    responses=openapi.problems(503, notes=_DEV_HOST),
)
async def readyz(context: Context) -> Response:
    try:
        await asyncio.wait_for(context.store.count_apps(), READY_TIMEOUT_SECONDS)
    except (StoreError, TimeoutError):
        return unavailable("the database does not answer").response()
    return JSON({"status": "ready"})
