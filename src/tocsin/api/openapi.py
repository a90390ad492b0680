"""What `/openapi.json` says beyond what FastAPI infers: every error a route can answer, who
may call it, and the bodies of the routes that read their body themselves.

Errors. Each route lists, with `problems(...)`, every status it can answer besides its
success, as `application/problem+json` (RFC 9457) with the headers that come with it
(`WWW-Authenticate` on a 401, `Retry-After` on a 429 or 503, the current `ETag` on a 412).

Security. An operation that can answer 401 needs credentials: it gets `security: bearer`.
The scheme is declared once here; `tocsin.api.context` reads `Authorization` itself rather
than through a FastAPI security dependency (see `get_principal`).

Bodies read by hand. FastAPI documents a body, a header or a dependency only when it parses
it for the route. The create routes do that work themselves instead: in their own order (who
is calling first, then what they sent, so a caller without a key learns nothing about the
body), and without FastAPI's per-request parameter machinery, which took 50 of the 160 µs a
single create spent in the app (measured in process, without the database). What they take
is described here as FastAPI would describe it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from tocsin.api import idempotency
from tocsin.api.body import MAX_BATCH_BODY_BYTES, MAX_BODY_BYTES
from tocsin.api.problems import MEDIA_TYPE

_REF = "#/components/schemas/{model}"
PROBLEM_MODEL = "ProblemOut"
SCHEME = "bearer"
_KEY_DOC = "Retries with the same key (and body) get the first answer back."
# What `idempotency.idempotency_key` accepts: 1-255 printable ASCII characters. HTTP drops
# a value's leading and trailing spaces on the way, so the schema cannot offer them.
_KEY_PATTERN = r"^[!-~]([ -~]*[!-~])?$"

SECURITY_DESCRIPTION = (
    "`Authorization: Bearer <credential>`, where the credential is either\n\n"
    "- an **API key** `tk_…` (`tocsin keys create --app NAME`): an app's key. It sees and "
    "changes the reminders its app saved, for any owner, and must name the `owner` it "
    "acts for; an admin key (`--admin`) sees every app's;\n"
    "- an **owner token** `to_…` (`tocsin keys owner-token OWNER`): a person's own page. It "
    "sees that owner's reminders from every app, and `owner` may be left out (it is the "
    "token's; another owner is a 403).\n\n"
    "A server listening on loopback with no API key created yet accepts requests without "
    "credentials (dev mode), from this machine's programs only."
)

_RETRY_AFTER = {
    "Retry-After": {
        "description": "Seconds to wait before trying again.",
        "schema": {"type": "string", "pattern": "^[0-9]+$"},
    }
}
_ETAG = {
    "ETag": {
        "description": 'The reminder\'s version (`"3"`): send it back in `If-Match` to edit.',
        "schema": {"type": "string"},
    }
}
_LOCATION = {"Location": {"description": "Where it can be read.", "schema": {"type": "string"}}}
REMINDER_HEADERS: dict[str, Any] = {**_ETAG, **_LOCATION}
CREATED_HEADERS: dict[str, Any] = _LOCATION


def _links(parameters: dict[str, str], *operations: str) -> dict[str, Any]:
    return {
        operation: {"operationId": operation, "parameters": parameters} for operation in operations
    }


# What a client (and schemathesis' stateful phase) can do next with what a create answered.
REMINDER_LINKS = _links(
    {"reminder_id": "$response.body#/id"},
    "getReminder",
    "editReminder",
    "snoozeReminder",
    "cancelReminder",
    "reminderOccurrences",
    "reminderFirings",
)
CONTACT_LINKS = _links(
    {"owner": "$request.path.owner", "contact_id": "$response.body#/id"},
    "getContact",
    "changeContact",
    "deleteContact",
)

PLACE_LINKS = _links(
    {"owner": "$request.path.owner", "place_id": "$response.body#/id"},
    "getPlace",
    "changePlace",
    "deletePlace",
)

_body_kib = MAX_BODY_BYTES // 1024
_batch_mib = MAX_BATCH_BODY_BYTES // (1024 * 1024)
_PROBLEMS: dict[int, tuple[str, dict[str, Any]]] = {
    400: ("The body is not JSON that can be read (`malformed-json`).", {}),
    401: (
        "Missing or bad API key or owner token (`unauthorized`).",
        {
            "WWW-Authenticate": {
                "description": 'Always `Bearer realm="tocsin"`.',
                "schema": {"type": "string"},
            }
        },
    ),
    403: (
        "Refused: an owner token acting for another owner (`forbidden`), or, in loopback dev "
        "mode, a `Host` that is not a loopback name or a write from another origin.",
        {},
    ),
    404: ("Not found, or not visible to this caller: ids leak nothing (`not-found`).", {}),
    409: ("The reminder's state does not allow it: the `type` and `detail` say why.", {}),
    410: ("No longer there: a ring's action link past its expiry (`action-link-expired`).", {}),
    412: ("`If-Match` names an old version: the `ETag` header is the current one.", _ETAG),
    413: (f"The body is over {_body_kib} KiB (a batch: {_batch_mib} MiB).", {}),
    415: ("The body is not sent as JSON (`unsupported-media-type`).", {}),
    422: ("Invalid input: `errors` names each field at fault (`invalid-input`).", {}),
    428: ("An edit without `If-Match` (`precondition-required`).", {}),
    429: ("Over a rate limit (`rate-limited`): wait `Retry-After` seconds.", _RETRY_AFTER),
    503: (
        "The database cannot be reached (`unavailable`): retry after `Retry-After`.",
        _RETRY_AFTER,
    ),
}
# Every route behind `get_principal`: refused credentials, the dev-mode guard, the rate
# limits, and a database that is away.
AUTHENTICATED = (401, 403, 429, 503)
# Every route that reads a JSON body (`tocsin.api.body.BodyGuard`, then the model).
WITH_BODY = (400, 413, 415, 422)


def problems(*statuses: int, notes: dict[int, str] | None = None) -> dict[int | str, Any]:
    """The `responses=` of a route for these error statuses; `notes` replace the generic
    description of a status with what it means on this route."""
    notes = notes or {}
    return {
        status: _problem(notes.get(status, _PROBLEMS[status][0]), _PROBLEMS[status][1])
        for status in sorted(set(statuses) | set(notes))
    }


def _problem(description: str, headers: dict[str, Any]) -> dict[str, Any]:
    schema = {"$ref": _REF.format(model=PROBLEM_MODEL)}
    response: dict[str, Any] = {
        "description": description,
        "content": {MEDIA_TYPE: {"schema": schema}},
    }
    if headers:
        response["headers"] = headers
    return response


def body_and_key(model: type[BaseModel]) -> dict[str, Any]:
    """`openapi_extra` of a route that takes `model` as JSON and an `Idempotency-Key`."""
    schema = {"$ref": _REF.format(model=model.__name__)}
    return {
        "parameters": [
            {
                "name": idempotency.HEADER,
                "in": "header",
                "required": False,
                "schema": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": idempotency.MAX_KEY_LENGTH,
                    "pattern": _KEY_PATTERN,
                    "title": idempotency.HEADER,
                },
                "description": _KEY_DOC,
            }
        ],
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": schema}},
        },
    }


def complete(app: FastAPI, models: Sequence[type[BaseModel]]) -> None:
    """Make `app`'s OpenAPI say what FastAPI cannot infer: `models` (and the schemas they
    refer to) among the components, the bearer scheme, and `security` on every operation
    that can answer 401."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        spec = generate()
        components = spec.setdefault("components", {})
        _, found = models_json_schema([(m, "validation") for m in models], ref_template=_REF)
        schemas = components.setdefault("schemas", {})
        for name, schema in found.get("$defs", {}).items():
            schemas.setdefault(name, schema)
        components["schemas"] = dict(sorted(schemas.items()))  # as FastAPI orders them
        components["securitySchemes"] = {
            SCHEME: {"type": "http", "scheme": "bearer", "description": SECURITY_DESCRIPTION}
        }
        _secure(spec)
        _drop_fastapi_422(spec)
        app.openapi_schema = spec
        return spec

    app.openapi = openapi  # type: ignore[method-assign]


def _drop_fastapi_422(spec: dict[str, Any]) -> None:
    """FastAPI declares a 422 of its own shape on every route with a parameter. Every error
    here is a problem (`tocsin.api.problems`), and the routes that can answer 422 declare it
    with `problems(422)`; on the others (a path id that any string fits) it cannot happen."""
    fastapi_422 = {"$ref": _REF.format(model="HTTPValidationError")}
    for operations in spec.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.get("responses", {})
            content = responses.get("422", {}).get("content", {})
            if content.get("application/json", {}).get("schema") == fastapi_422:
                del responses["422"]
    for name in ("HTTPValidationError", "ValidationError"):
        spec["components"]["schemas"].pop(name, None)


def _secure(spec: dict[str, Any]) -> None:
    for operations in spec.get("paths", {}).values():
        for operation in operations.values():
            if "401" in operation.get("responses", {}):
                operation["security"] = [{SCHEME: []}]
