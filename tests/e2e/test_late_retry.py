"""A create retried through an outage after its `at` came, through the running service: with
its Idempotency-Key it is saved and rings at once, late, while its freshness allows; without
a key, or later than that, it is refused as in the past."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.service import firings, iso, late, service
from tests.integration.engine.support import receiver

pytestmark = pytest.mark.slow

PASSED = 30  # seconds since the `at`: the outage the first try met
FRESHNESS = "2m"


def _body(at: datetime) -> dict[str, Any]:
    return {
        "owner": "ana",
        "zone": "UTC",
        "channel": "webhook",
        "text": "stand-up",
        "at": iso(at),
        "freshness": FRESHNESS,
    }


@pytest.mark.postgres
@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_keyed_retry_after_its_at_is_saved_and_rings_at_once(
    kind: str, tmp_path: Path, pg_migrated_url: str
) -> None:
    settings = {"TOCSIN_ALLOW_PRIVATE_URLS": "true"}
    with (
        receiver() as sink,
        service(kind, tmp_path, pg_migrated_url, sink, settings) as base,
        httpx.Client(base_url=base, timeout=10) as client,
    ):
        now = datetime.now(UTC).replace(microsecond=0)
        passed = _body(now - timedelta(seconds=PASSED))
        unkeyed = client.post("/v1/reminders", json=passed)
        assert unkeyed.status_code == 422, unkeyed.text
        too_late = client.post(
            "/v1/reminders",
            json=_body(now - timedelta(minutes=5)),
            headers={"Idempotency-Key": "too-late"},
        )
        assert too_late.status_code == 422, too_late.text
        assert too_late.json()["errors"][0]["field"] == "at"

        keyed = client.post("/v1/reminders", json=passed, headers={"Idempotency-Key": "retry-1"})
        assert keyed.status_code == 201, keyed.text
        made = keyed.json()
        again = client.post("/v1/reminders", json=passed, headers={"Idempotency-Key": "retry-1"})
        assert again.status_code == 201
        assert again.json()["id"] == made["id"]

        give_up = time.monotonic() + 60
        while not (rung := firings(client, made)) or rung[0]["state"] != "sent":
            assert time.monotonic() < give_up, rung
            time.sleep(0.2)
        received = sink.stats(ids=True)
    assert len(rung) == 1
    assert rung[0]["due"] == passed["at"]
    assert late(rung[0]) >= PASSED  # late, as it could only be
    assert list(received["arrivals"]) == [rung[0]["id"]]
