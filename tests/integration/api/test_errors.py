"""Errors outside the reminders themselves: routing, the database, health, OpenAPI."""

from __future__ import annotations

import inspect
from typing import Any, cast

import httpx
import pytest
from fastapi.routing import APIRoute

from tests.integration.api.conftest import ANA, settings
from tocsin.api import create_app
from tocsin.api.routes import health, reminders
from tocsin.clock import FakeClock
from tocsin.errors import StoreUnavailable
from tocsin.keyring import Keyring
from tocsin.store import Store


async def test_unknown_paths_and_methods_are_problems(client: httpx.AsyncClient) -> None:
    missing = await client.get("/v2/nothing")
    wrong = await client.put("/v1/reminders", json=ANA)

    assert missing.status_code == 404
    assert missing.headers["content-type"] == "application/problem+json"
    assert missing.json()["type"].endswith("not-found")
    assert wrong.status_code == 405
    assert wrong.json()["status"] == 405
    assert "POST" in wrong.headers["allow"]


async def test_health_and_readiness(client: httpx.AsyncClient) -> None:
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    assert (await client.get("/readyz")).json() == {"status": "ready"}


async def test_openapi_lists_every_route(client: httpx.AsyncClient) -> None:
    spec = (await client.get("/openapi.json")).json()

    assert set(spec["paths"]) >= {
        "/v1/reminders",
        "/v1/reminders:batch",
        "/v1/reminders/{reminder_id}",
        "/v1/reminders/{reminder_id}/occurrences",
        "/v1/reminders/{reminder_id}/firings",
        "/v1/occurrences",
        "/healthz",
        "/readyz",
    }


async def test_openapi_describes_what_the_create_routes_read(client: httpx.AsyncClient) -> None:
    spec = (await client.get("/openapi.json")).json()
    schemas = spec["components"]["schemas"]

    for path, model in (("/v1/reminders", "ReminderIn"), ("/v1/reminders:batch", "BatchIn")):
        operation = spec["paths"][path]["post"]
        body = operation["requestBody"]["content"]["application/json"]["schema"]
        assert body == {"$ref": f"#/components/schemas/{model}"}
        assert [p["name"] for p in operation["parameters"]] == ["Idempotency-Key"]
    # `channel` or `fallback`: one of the two, which the schema leaves to the 422; `text`, unless
    # `say` gives it, which the schema says as the text's description and the 422 enforces.
    assert set(schemas["ReminderIn"]["required"]) == {"zone"}
    assert {"text", "say"} <= set(schemas["ReminderIn"]["properties"])
    assert {"channel", "fallback"} <= set(schemas["ReminderIn"]["properties"])
    channel = schemas["ReminderIn"]["properties"]["channel"]["anyOf"]
    assert channel[0] == {"$ref": "#/components/schemas/Channel"}
    assert channel[1]["type"] == "array"
    assert "Channel" in schemas


async def test_a_body_nested_too_deep_to_read_is_a_400(client: httpx.AsyncClient) -> None:
    deep = b'{"owner": "ana", "metadata": {"a": ' + b"[" * 1010 + b"]" * 1010 + b"}}"

    for path in ("/v1/reminders", "/v1/reminders:batch"):
        response = await client.post(
            path, content=deep, headers={"content-type": "application/json"}
        )

        assert response.status_code == 400
        assert response.headers["content-type"] == "application/problem+json"


class _Unreachable:
    """A store whose database has gone away."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        async def fail(*args: Any, **kwargs: Any) -> Any:
            raise StoreUnavailable("connection refused")

        return fail

    @property
    def keyring(self) -> Keyring:  # the process's own, not the database's: still there
        return self._store.keyring


@pytest.fixture
async def down(store: Store, clock: FakeClock) -> Any:
    app = create_app(store=cast(Store, _Unreachable(store)), settings=settings(), clock=clock)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1"
    ) as client:
        yield client


async def test_a_database_outage_is_a_503_with_retry_after(down: httpx.AsyncClient) -> None:
    for response in (
        await down.post("/v1/reminders", json=ANA),
        await down.get("/readyz"),
    ):
        assert response.status_code == 503
        assert response.headers["retry-after"] == "5"
        assert response.headers["content-type"] == "application/problem+json"
    assert (await down.get("/healthz")).status_code == 200


def test_no_route_or_dependency_runs_in_a_thread() -> None:
    """FastAPI runs a plain `def` route or dependency in a worker thread: a thread hop on
    every request. Every one of ours is `async def`."""
    routes = [*health.router.routes, *reminders.router.routes]
    pending = [route.dependant for route in routes if isinstance(route, APIRoute)]
    seen = []
    while pending:
        dependant = pending.pop()
        if dependant.call is not None:
            seen.append(dependant.call)
            assert inspect.iscoroutinefunction(dependant.call), dependant.call
        pending.extend(dependant.dependencies)
    assert len(seen) > 10


async def test_openapi_names_each_operation_and_who_may_call_it(client: httpx.AsyncClient) -> None:
    spec = (await client.get("/openapi.json")).json()
    operations = {
        operation["operationId"]: operation
        for path in spec["paths"].values()
        for operation in path.values()
    }

    assert set(operations) >= {
        "createReminder",
        "createReminders",
        "listReminders",
        "getReminder",
        "editReminder",
        "snoozeReminder",
        "cancelReminder",
        "reminderOccurrences",
        "previewOccurrences",
        "reminderFirings",
        "createContact",
        "listContacts",
        "getContact",
        "changeContact",
        "deleteContact",
        "listChannels",
        "health",
        "ready",
        "metrics",
    }
    scheme = spec["components"]["securitySchemes"]["bearer"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer")
    assert "tk_" in scheme["description"]
    assert "to_" in scheme["description"]
    for name, operation in operations.items():
        public = name in ("health", "ready", "metrics")
        # An action link is its own credential, and refused links are rate-limited.
        linked = name in ("actionLinkPage", "followActionLink")
        assert ("security" not in operation) is (public or linked), name
        assert ("429" not in operation["responses"]) is public, name
        # A browser following an action link is answered a page: it asks for HTML.
        refusals = ["application/problem+json", *(["text/html"] if linked else [])]
        for status, response in operation["responses"].items():
            if status >= "400":
                assert list(response["content"]) == refusals, (name, status)


async def test_a_405_names_every_method_of_the_path(client: httpx.AsyncClient) -> None:
    response = await client.request("OPTIONS", "/v1/reminders/06h2t78nsp7knvtqapke")

    assert response.status_code == 405
    assert response.headers["allow"] == "GET, PATCH, DELETE"


async def test_the_interactive_docs_still_load(client: httpx.AsyncClient) -> None:
    response = await client.get("/docs")

    assert response.status_code == 200
    assert "/openapi.json" in response.text
