"""OpenAPI for the routes that read their body themselves (the two create routes).

FastAPI documents a body, a header or a dependency only when it parses it for the route. The
create routes do that work themselves instead: in their own order (who is calling first, then
what they sent, so a caller without a key learns nothing about the body), and without
FastAPI's per-request parameter machinery, which took 50 of the 160 µs a single create spent
in the app (measured in process, without the database). What they take is described here as
FastAPI would describe it (pydantic's schema generator adds `"default": null` to optional
fields, which FastAPI's leaves out).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from tocsin.api import idempotency

_REF = "#/components/schemas/{model}"
_KEY_DOC = "Retries with the same key (and body) get the first answer back."


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
                    "anyOf": [{"type": "string"}, {"type": "null"}],
                    "description": _KEY_DOC,
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


def add_request_models(app: FastAPI, models: Sequence[type[BaseModel]]) -> None:
    """Put `models`, and the schemas they refer to, among the components of `app`'s OpenAPI."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        spec = generate()
        _, found = models_json_schema([(m, "validation") for m in models], ref_template=_REF)
        schemas = spec.setdefault("components", {}).setdefault("schemas", {})
        for name, schema in found.get("$defs", {}).items():
            schemas.setdefault(name, schema)
        spec["components"]["schemas"] = dict(sorted(schemas.items()))  # as FastAPI orders them
        app.openapi_schema = spec
        return spec

    app.openapi = openapi  # type: ignore[method-assign]
