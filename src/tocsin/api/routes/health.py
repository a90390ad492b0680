"""Liveness and readiness, for load balancers and orchestrators (no auth)."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from tocsin.api import openapi
from tocsin.api.context import Context
from tocsin.api.problems import unavailable
from tocsin.api.render import JSON
from tocsin.readiness import database_problem

router = APIRouter(tags=["health"])


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
    summary="The database answers, with the schema this version needs",
    operation_id="ready",
    responses=openapi.problems(503, notes=_DEV_HOST),
)
async def readyz(context: Context) -> Response:
    problem = await database_problem(context.store)
    if problem is not None:
        return unavailable(problem).response()
    return JSON({"status": "ready"})
