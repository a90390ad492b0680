"""Liveness and readiness, for load balancers and orchestrators (no auth)."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter
from starlette.responses import Response

from tocsin.api.context import Context
from tocsin.api.problems import unavailable
from tocsin.api.render import JSON
from tocsin.errors import StoreError

router = APIRouter(tags=["health"])
READY_TIMEOUT_SECONDS = 2.0


@router.get("/healthz", summary="The process is alive")
async def healthz() -> Response:
    return JSON({"status": "ok"})


@router.get("/readyz", summary="The database answers")
async def readyz(context: Context) -> Response:
    try:
        await asyncio.wait_for(context.store.count_apps(), READY_TIMEOUT_SECONDS)
    except (StoreError, TimeoutError):
        return unavailable("the database does not answer").response()
    return JSON({"status": "ready"})
