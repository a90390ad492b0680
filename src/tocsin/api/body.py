"""The gate every request body passes before a route sees it: size, media type, JSON syntax.

The size limit is checked while the body streams in (chunked bodies have no Content-Length),
so a huge body is refused after reading 64 KiB, never parsed. The syntax check uses orjson,
which is stricter than the standard library (no `NaN`, no lone surrogates, bounded depth):
what passes it can be stored by either database.
"""

from __future__ import annotations

import json
from typing import TypeVar

import orjson
from pydantic import BaseModel
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tocsin.api.problems import FieldError, Problem, invalid, malformed_json

M = TypeVar("M", bound=BaseModel)

MAX_BODY_BYTES = 64 * 1024
# A batch holds up to 1,000 reminders, which do not fit in 64 KiB; it gets its own limit.
MAX_BATCH_BODY_BYTES = 2 * 1024 * 1024
LIMITS = {"/v1/reminders:batch": MAX_BATCH_BODY_BYTES}
_WITH_BODY = frozenset({"POST", "PUT", "PATCH"})
# curl's `-d` sends this type by default; the README's one-line call must work as written.
_TAKEN_AS_JSON = frozenset({"", "application/x-www-form-urlencoded"})


class BodyGuard:
    """ASGI middleware: 413 over the limit, 415 for a non-JSON type, 400 for broken JSON."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_bytes: int = MAX_BODY_BYTES,
        limits: dict[str, int] | None = None,
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.limits = LIMITS if limits is None else limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in _WITH_BODY:
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        media = _media_type(headers)
        try:
            body = await self._read(scope, headers, receive)
            if body:
                _check_json(media, body)
        except Problem as problem:
            await problem.response()(scope, receive, send)
            return
        if body is None:  # the client went away
            return
        if body and media != "application/json":
            scope = _as_json(scope)
        await self.app(scope, _replay(body, receive), send)

    async def _read(self, scope: Scope, headers: Headers, receive: Receive) -> bytes | None:
        limit = self.limits.get(scope["path"], self.max_bytes)
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            raise _too_large(limit)
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise _too_large(limit)
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)


def _too_large(limit: int) -> Problem:
    detail = f"the body is larger than {limit // 1024} KiB"
    return Problem(
        413,
        "body-too-large",
        detail,
        errors=[FieldError("body", detail)],
        headers={"Connection": "close"},
    )


def _media_type(headers: Headers) -> str:
    value = headers.get("content-type", "")
    return value.split(";", 1)[0].strip().lower()


async def validated(request: Request, model: type[M]) -> M:
    """The body, which passed the guard, as `model`: read and checked as FastAPI reads and
    checks a body parameter, with the same errors (answered 422 by the `ValidationError`
    handler). It is parsed again with the standard library because orjson reads an integer
    beyond 64 bits as a float, which the metadata check could then not refuse."""
    body = await request.body()
    if not body:
        raise invalid([FieldError("body", "required")])
    try:
        value = json.loads(body)
    except RecursionError:  # nested deeper than this parser goes, though orjson went
        raise Problem(400, "http-error", "There was an error parsing the body") from None
    return model.model_validate(value, from_attributes=True)


def _check_json(media: str, body: bytes) -> None:
    is_json = media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )
    if not is_json and media not in _TAKEN_AS_JSON:
        detail = f"send JSON with Content-Type: application/json, not {media}"
        raise Problem(415, "unsupported-media-type", detail, errors=[FieldError("body", detail)])
    try:
        orjson.loads(body)
    except orjson.JSONDecodeError as error:
        raise malformed_json(f"the body is not valid JSON: {error}") from None


def _as_json(scope: Scope) -> Scope:
    headers = [(k, v) for k, v in scope["headers"] if k != b"content-type"]
    headers.append((b"content-type", b"application/json"))
    # In place, not a copy: the layers outside read what routing adds to the scope (the
    # route template that `tocsin.api.metrics` counts requests by).
    scope["headers"] = headers
    return scope


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replayed
