"""POST /v1/reminders: what is saved and answered, and every way a request is refused."""

from __future__ import annotations

from typing import Any

import httpx

from tests.integration.api.conftest import ANA, ONE_OFF, create, fields
from tocsin.store import Store


async def test_anas_weekly_reminder_rings_next_monday_nine_new_york(
    client: httpx.AsyncClient, store: Store
) -> None:
    response = await client.post("/v1/reminders", json=ANA)

    assert response.status_code == 201
    body = response.json()
    assert body["next"] == "2026-10-26T13:00:00Z"
    assert body["next_local"] == "2026-10-26T09:00:00-04:00"
    assert body["status"] == "pending"
    assert body["owner"] == "ana"
    assert body["repeat"] == "every Monday 09:00"
    assert "FREQ=WEEKLY" in body["rule"]
    assert body["freshness"] == "10m"
    assert body["metadata"] is None
    assert body["source"] is None
    assert body["created_at"] == body["updated_at"] == "2026-10-21T12:00:00Z"
    assert response.headers["location"] == f"/v1/reminders/{body['id']}"
    assert response.headers["etag"] == '"1"'
    saved = await store.get_reminder(body["id"])
    assert saved is not None
    assert saved.due_at is not None
    assert saved.due_at.isoformat() == "2026-10-26T13:00:00+00:00"


async def test_a_one_off_at_a_local_wall_time(client: httpx.AsyncClient) -> None:
    metadata = {"list": "family", "n": [1, 2.5, None, True], "nested": {"é": "ü"}}
    body = await create(client, {**ONE_OFF, "freshness": "90s", "metadata": metadata})

    assert body["at"] == "2026-10-21T18:00:00"
    assert body["next"] == "2026-10-21T17:00:00Z"
    assert body["next_local"] == "2026-10-21T18:00:00+01:00"
    assert body["rule"] is None
    assert body["freshness"] == "1m30s"
    assert body["metadata"] == metadata


async def test_a_one_off_at_an_absolute_instant(client: httpx.AsyncClient) -> None:
    body = await create(client, {**ONE_OFF, "at": "2026-10-22T09:30:00+02:00"})

    assert body["next"] == "2026-10-22T07:30:00Z"
    assert body["at"] == "2026-10-22T07:30:00Z"


async def test_the_readme_call_without_a_content_type_works(client: httpx.AsyncClient) -> None:
    """`curl -d '{…}'` sends application/x-www-form-urlencoded; it is taken as JSON."""
    import orjson

    for content_type in (None, "application/x-www-form-urlencoded"):
        headers = {"Content-Type": content_type} if content_type else {}
        response = await client.post("/v1/reminders", content=orjson.dumps(ANA), headers=headers)
        assert response.status_code == 201, response.text
        assert response.json()["next"] == "2026-10-26T13:00:00Z"


BAD_FIELDS: list[tuple[dict[str, Any], str]] = [
    ({"owner": ""}, "owner"),
    ({"owner": "a" * 129}, "owner"),
    ({"owner": "ana smith"}, "owner"),
    ({"owner": 7}, "owner"),
    ({"text": ""}, "text"),
    ({"text": "   "}, "text"),
    ({"text": "x" * 1001}, "text"),
    ({"text": "nul\u0000"}, "text"),
    ({"channel": "pigeon"}, "channel"),
    ({"zone": "Mars/Olympus"}, "zone"),
    ({"zone": "+02:00"}, "zone"),
    ({"repeat": "whenever you like"}, "repeat"),
    ({"repeat": "every 10 seconds"}, "repeat"),
    ({"repeat": None, "at": "2020-01-01T09:00"}, "at"),
    ({"repeat": None, "at": "tomorrowish"}, "at"),
    ({"freshness": "10"}, "freshness"),
    ({"freshness": "5s"}, "freshness"),
    ({"freshness": "8d"}, "freshness"),
    ({"metadata": {"blob": "x" * 5000}}, "metadata"),
    ({"metadata": {"big": 10**30}}, "metadata"),
    ({"metadata": ["not", "an", "object"]}, "metadata"),
    ({"repat": "daily 9:00"}, "repat"),
]


async def test_each_bad_field_is_a_422_naming_it(client: httpx.AsyncClient, store: Store) -> None:
    # One database for all cases: each case is a request, not a fresh setup.
    for change, field in BAD_FIELDS:
        response = await client.post("/v1/reminders", json={**ANA, **change})

        assert response.status_code == 422, (change, response.text)
        assert response.headers["content-type"] == "application/problem+json"
        problem = response.json()
        assert problem["status"] == 422
        assert problem["type"].startswith("urn:tocsin:problem:")
        assert problem["title"]
        assert problem["detail"]
        assert field in fields(problem), (change, problem)
    assert await store.list_reminders("ana") == []


async def test_missing_fields_are_named_all_at_once(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/reminders", json={"owner": "ana"})

    assert response.status_code == 422
    assert set(fields(response.json())) == {"text", "channel", "zone"}


async def test_neither_at_nor_repeat(client: httpx.AsyncClient) -> None:
    body = {k: v for k, v in ANA.items() if k != "repeat"}
    response = await client.post("/v1/reminders", json=body)

    assert response.status_code == 422
    assert fields(response.json()) == ["at"]


async def test_a_bad_schedule_and_a_bad_freshness_are_named_together(
    client: httpx.AsyncClient,
) -> None:
    response = await client.post(
        "/v1/reminders", json={**ANA, "zone": "Nowhere/Land", "freshness": "forever"}
    )

    assert response.status_code == 422
    assert set(fields(response.json())) == {"zone", "freshness"}


async def test_malformed_json_is_a_400(client: httpx.AsyncClient) -> None:
    for raw in (b'{"owner": "ana",', b'{"a": NaN}', b"[" * 5000, b'"\\ud800"'):
        response = await client.post(
            "/v1/reminders", content=raw, headers={"Content-Type": "application/json"}
        )
        assert response.status_code == 400, raw
        assert response.headers["content-type"] == "application/problem+json"
        assert fields(response.json()) == ["body"]


async def test_a_body_that_is_not_an_object(client: httpx.AsyncClient) -> None:
    for raw in (b"[]", b"42", b"null"):
        response = await client.post(
            "/v1/reminders", content=raw, headers={"Content-Type": "application/json"}
        )
        assert response.status_code == 422, raw
        assert fields(response.json()) == ["body"]


async def test_an_empty_body(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/reminders", headers={"Content-Type": "application/json"})

    assert response.status_code == 422
    assert fields(response.json()) == ["body"]


async def test_a_body_that_is_not_json_is_a_415(client: httpx.AsyncClient) -> None:
    for content_type in ("text/plain", "multipart/form-data; boundary=x", "application/xml"):
        response = await client.post(
            "/v1/reminders", content=b'{"owner": "ana"}', headers={"Content-Type": content_type}
        )

        assert response.status_code == 415, content_type
        assert fields(response.json()) == ["body"]


async def test_json_with_a_charset_is_json(client: httpx.AsyncClient) -> None:
    import orjson

    response = await client.post(
        "/v1/reminders",
        content=orjson.dumps(ANA),
        headers={"Content-Type": "application/json; charset=utf-8"},
    )

    assert response.status_code == 201


async def test_a_body_over_64_kib_is_a_413_before_parsing(client: httpx.AsyncClient) -> None:
    raw = b'{"text": "' + b"x" * (64 * 1024) + b'"}'
    response = await client.post(
        "/v1/reminders", content=raw, headers={"Content-Type": "application/json"}
    )

    assert response.status_code == 413
    assert response.headers["content-type"] == "application/problem+json"
    assert fields(response.json()) == ["body"]


async def test_a_chunked_body_over_64_kib_is_a_413(client: httpx.AsyncClient) -> None:
    async def chunks() -> Any:
        yield b'{"text": "'
        for _ in range(80):
            yield b"x" * 1024
        yield b'"}'

    response = await client.post(
        "/v1/reminders", content=chunks(), headers={"Content-Type": "application/json"}
    )

    assert "content-length" not in response.request.headers
    assert response.status_code == 413
