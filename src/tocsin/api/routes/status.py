"""The status board: `GET /v1/status` (JSON, admin key or loopback dev mode) and the page
that draws it, `GET /status` with its script and style sheet."""

from __future__ import annotations

from importlib import resources
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from starlette.responses import Response

from tocsin.api import openapi
from tocsin.api.context import Caller
from tocsin.api.problems import Problem
from tocsin.api.render import JSON
from tocsin.api.security import ANONYMOUS
from tocsin.statusboard.board import Board
from tocsin.statusboard.models import StatusOut

router = APIRouter(tags=["status"])

# The page runs only its own files: no inline script or style, nothing from elsewhere, and
# it talks to this server only.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_PAGE_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}
_ASSETS = resources.files("tocsin.statusboard").joinpath("assets")
_FILES = {
    "status.html": "text/html; charset=utf-8",
    "status.js": "text/javascript; charset=utf-8",
    "status.css": "text/css; charset=utf-8",
}


async def get_board(request: Request) -> Board:
    board: Board = request.app.state.status_board
    return board


@router.get(
    "/v1/status",
    response_model=StatusOut,
    summary="The status board: workers, minutes ahead, the last hour's rings, queue, breakers",
    operation_id="status",
    responses=openapi.problems(
        *openapi.AUTHENTICATED,
        notes={
            403: "Not an admin key (an app's key or an owner token), or, in loopback dev "
            "mode, a `Host` that is not a loopback name."
        },
    ),
)
async def status(caller: Caller, board: Annotated[Board, Depends(get_board)]) -> Response:
    if not caller.admin and caller != ANONYMOUS:
        raise Problem(
            403,
            "forbidden",
            "the status board needs an admin key (tocsin keys create --app NAME --admin)",
        )
    return JSON(await board.read())


@router.get("/status", include_in_schema=False)
async def page() -> Response:
    return _asset("status.html")


@router.get("/status/{name}", include_in_schema=False)
async def asset(name: str) -> Response:
    if name not in _FILES or name.endswith(".html"):
        raise Problem(404, "not-found", f"no file {name} here")
    return _asset(name)


def _asset(name: str) -> Response:
    body = _ASSETS.joinpath(name).read_bytes()
    return Response(body, media_type=_FILES[name], headers=_PAGE_HEADERS)
