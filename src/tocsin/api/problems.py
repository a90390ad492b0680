"""RFC 9457 problem details: every error the API answers, and the handlers that make them."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from starlette.routing import Match

from tocsin.errors import InvalidInput, StoreError, StoreUnavailable

log = logging.getLogger("tocsin.api")

PROBLEM_TYPE = "urn:tocsin:problem:"
MEDIA_TYPE = "application/problem+json"
RETRY_AFTER_SECONDS = 5
_LOCATIONS = ("body", "query", "path", "header", "cookie")
_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")


@dataclass(frozen=True, slots=True)
class FieldError:
    """One field at fault: `field` is a dotted path (`items.3.zone`), `message` says why."""

    field: str
    message: str


class Problem(Exception):
    """An error answer: raise it anywhere below a route and the client gets it as is."""

    def __init__(
        self,
        status: int,
        slug: str,
        detail: str,
        *,
        errors: Sequence[FieldError] = (),
        headers: Mapping[str, str] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.slug = slug
        self.detail = detail
        self.errors = tuple(errors)
        self.headers = dict(headers or {})
        self.extra = dict(extra or {})

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "type": PROBLEM_TYPE + self.slug,
            "title": HTTPStatus(self.status).phrase,
            "status": self.status,
            "detail": self.detail,
        }
        if self.errors:
            body["errors"] = [{"field": e.field, "message": e.message} for e in self.errors]
        body.update(self.extra)
        return body

    def response(self) -> Response:
        return Response(
            orjson.dumps(self.to_dict()),
            status_code=self.status,
            headers=self.headers,
            media_type=MEDIA_TYPE,
        )


def invalid(errors: Sequence[FieldError]) -> Problem:
    """The 422 for input that cannot be accepted, naming each field at fault."""
    fields = ", ".join(dict.fromkeys(e.field for e in errors))
    return Problem(422, "invalid-input", f"the request is not valid: see {fields}", errors=errors)


def invalid_field(field: str, message: str) -> Problem:
    return invalid([FieldError(field, message)])


def field_errors(errors: Iterable[Mapping[str, Any]], *, prefix: str = "") -> list[FieldError]:
    """Pydantic's error list, as our field errors (`("body", "items", 3)` → `items.3`)."""
    found = []
    for error in errors:
        loc = [str(part) for part in error.get("loc", ())]
        if loc and loc[0] in _LOCATIONS:
            location, loc = loc[0], loc[1:]
        else:
            location = "body"
        path = ".".join([prefix.rstrip(".")] * bool(prefix) + loc) or location
        found.append(FieldError(path, _message(error)))
    return found


def _message(error: Mapping[str, Any]) -> str:
    kind = error.get("type")
    if kind == "extra_forbidden":
        return "unknown field"
    if kind == "missing":
        return "required"
    message = str(error.get("msg", "invalid"))
    return message.removeprefix("Value error, ")


def _is_malformed_json(errors: Sequence[Any]) -> bool:
    return any(e.get("type") == "json_invalid" for e in errors)


async def _on_validation(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError | ValidationError)
    errors = exc.errors()
    if _is_malformed_json(errors):
        return malformed_json("the body is not valid JSON").response()
    return invalid(field_errors(errors)).response()


def malformed_json(detail: str) -> Problem:
    return Problem(400, "malformed-json", detail, errors=[FieldError("body", detail)])


async def _on_problem(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, Problem)
    return exc.response()


async def _on_invalid_input(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, InvalidInput)
    return invalid_field(exc.field, exc.message).response()


async def _on_http(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    slug = {404: "not-found", 405: "method-not-allowed"}.get(exc.status_code, "http-error")
    detail = exc.detail if isinstance(exc.detail, str) else HTTPStatus(exc.status_code).phrase
    if exc.status_code == 404 and detail == "Not Found":
        detail = f"no such resource: {request.url.path}"
    headers = exc.headers
    if exc.status_code == 405:
        detail = f"{request.method} is not allowed on {request.url.path}"
        headers = {**(headers or {}), "Allow": _allowed(request)}
    return Problem(exc.status_code, slug, detail, headers=headers).response()


def _allowed(request: Request) -> str:
    """Every method the path answers. Starlette's 405 names those of the first route that
    matched the path alone, but `GET` and `PATCH /v1/reminders/{id}` are two routes; each
    method is tried against the routes instead (FastAPI wraps included routers, so the
    routes' own method sets are not at hand)."""
    routes = request.app.router.routes
    return ", ".join(
        method
        for method in _METHODS
        if any(
            route.matches({**request.scope, "method": method})[0] is Match.FULL for route in routes
        )
    )


async def _on_store_unavailable(request: Request, exc: Exception) -> Response:
    log.warning("database unavailable", extra={"error": str(exc), "path": request.url.path})
    return unavailable("the database cannot be reached right now; retry shortly").response()


def unavailable(detail: str) -> Problem:
    return Problem(503, "unavailable", detail, headers={"Retry-After": str(RETRY_AFTER_SECONDS)})


async def _on_unexpected(request: Request, exc: Exception) -> Response:
    log.exception("unexpected error", extra={"path": request.url.path, "method": request.method})
    slug = "storage-error" if isinstance(exc, StoreError) else "internal-error"
    return Problem(500, slug, "something went wrong on our side; it has been logged").response()


def install(app: FastAPI) -> None:
    """Make every error an `application/problem+json` answer."""
    app.add_exception_handler(RequestValidationError, _on_validation)
    app.add_exception_handler(ValidationError, _on_validation)
    app.add_exception_handler(Problem, _on_problem)
    app.add_exception_handler(InvalidInput, _on_invalid_input)
    app.add_exception_handler(StarletteHTTPException, _on_http)
    app.add_exception_handler(StoreUnavailable, _on_store_unavailable)
    app.add_exception_handler(StoreError, _on_unexpected)
    app.add_exception_handler(Exception, _on_unexpected)
