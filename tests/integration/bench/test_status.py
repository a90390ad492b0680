"""A small run of `bench status` on both backends, so its bulk rows keep matching the schema
and the board it times reads them all: the busy minute ahead, every firing behind."""

from __future__ import annotations

import pytest

from tests.support.postgres import PostgresServer
from tocsin_bench.status import StatusSpec, run_status

pytestmark = pytest.mark.slow

BUSY = 400
FIRINGS = 1_500


def _spec(db: str, pg_url: str | None = None) -> StatusSpec:
    return StatusSpec(db=db, reminders=3_000, firings=FIRINGS, busy=BUSY, reads=2, pg_url=pg_url)


async def test_status_on_sqlite() -> None:
    result = await run_status(_spec("sqlite"))

    _check(result["metrics"])


@pytest.mark.postgres
async def test_status_on_postgres(pg_server: PostgresServer) -> None:
    result = await run_status(_spec("postgres", pg_server.admin_url))

    _check(result["metrics"])


def _check(metrics: dict[str, float]) -> None:
    assert metrics["busiest_minute_ahead_shown"] >= BUSY  # with its share of the others
    assert metrics["rings_read"] == FIRINGS  # all in the last hour, none over a cap
    assert metrics["board_ms_median"] > 0
    assert metrics["exact_hour_ms"] > 0
