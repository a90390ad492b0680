"""`/` and `/web/…`: the reminders page and its files (`tocsin.web`), outside the API
schema."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from tocsin import web
from tocsin.api.problems import Problem

router = APIRouter(include_in_schema=False)


@router.api_route("/", methods=["GET", "HEAD"])
async def page() -> Response:
    return Response(web.read(web.PAGE), media_type="text/html; charset=utf-8", headers=web.HEADERS)


@router.get("/web/{name}")
async def asset(name: str) -> Response:
    media_type = web.ASSETS.get(name)
    if media_type is None:
        raise Problem(404, "not-found", f"no file {name} in the page's files")
    return Response(web.read(name), media_type=media_type, headers=web.HEADERS)
